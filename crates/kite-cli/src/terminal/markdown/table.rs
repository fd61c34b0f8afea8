//! Tables: collected cell by cell while the events arrive, laid out at their end, once the
//! width of every column is known.

use super::{DIM, RESET};
use pulldown_cmark::Alignment;

/// A table being collected.
#[derive(Default)]
pub(super) struct Table {
    /// How each column is aligned.
    aligns: Vec<Alignment>,
    /// The rows so far, the header first.
    rows: Vec<Vec<Cell>>,
    /// How many rows the header has.
    head: usize,
    /// The cell being filled.
    pub(super) cell: Option<Cell>,
}

/// A rendered table cell.
#[derive(Default)]
pub(super) struct Cell {
    /// Its text, with the renderer's escapes.
    pub(super) text: String,
    /// How many characters it shows.
    pub(super) width: usize,
}

impl Table {
    /// A table whose columns are aligned so.
    pub(super) fn new(aligns: Vec<Alignment>) -> Self {
        Self {
            aligns,
            ..Self::default()
        }
    }

    /// Starts a row.
    pub(super) fn start_row(&mut self) {
        self.rows.push(Vec::new());
    }

    /// Ends the header: the rows so far.
    pub(super) fn end_head(&mut self) {
        self.head = self.rows.len();
    }

    /// Adds the cell being filled to the current row.
    pub(super) fn end_cell(&mut self) {
        let cell = self.cell.take().unwrap_or_default();
        if let Some(row) = self.rows.last_mut() {
            row.push(cell);
        }
    }

    /// The table's lines: cells padded to their column's widest and separated by " │ ", a
    /// dim rule under the header.
    pub(super) fn lines(&self) -> Vec<String> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = cell.width.max(*width);
            }
        }
        let mut lines = Vec::new();
        for (index, row) in self.rows.iter().enumerate() {
            let mut line = String::new();
            for (column, &width) in widths.iter().enumerate() {
                if column > 0 {
                    line.push_str(" │ ");
                }
                let (text, shown) = row
                    .get(column)
                    .map_or(("", 0), |cell| (cell.text.as_str(), cell.width));
                let gap = width.saturating_sub(shown);
                let (left, right) = match self.aligns.get(column) {
                    Some(Alignment::Right) => (gap, 0),
                    Some(Alignment::Center) => (gap / 2, gap - gap / 2),
                    _ => (0, gap),
                };
                // No spaces at the end of a line.
                let right = if column + 1 == columns { 0 } else { right };
                line.push_str(&" ".repeat(left));
                line.push_str(text);
                line.push_str(&" ".repeat(right));
            }
            lines.push(line);
            if index + 1 == self.head {
                let rule: Vec<String> = widths.iter().map(|&width| "─".repeat(width)).collect();
                lines.push(format!("{DIM}{}{RESET}", rule.join("─┼─")));
            }
        }
        lines
    }
}
