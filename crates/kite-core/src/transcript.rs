//! Speech to text: what is sent to a transcription model and what it answers.

use crate::Usage;
use serde::{Deserialize, Serialize};

/// Audio to transcribe, and how.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TranscriptionRequest {
    /// The transcription model, by the provider's name for it.
    pub model: String,
    /// The audio to transcribe.
    pub audio: Audio,
    /// The spoken language (ISO-639-1, `"en"`), when known; improves accuracy and speed.
    pub language: Option<String>,
    /// Text to guide the style or spelling (names, jargon).
    pub prompt: Option<String>,
    /// The answer's shape; `None` leaves it to the provider (JSON).
    pub format: Option<TranscriptFormat>,
    /// Sampling temperature: higher is more varied, lower more predictable.
    pub temperature: Option<f64>,
    /// Timestamps to return with `VerboseJson`: `"word"`, `"segment"`.
    pub timestamp_granularities: Vec<String>,
    /// Form fields kite has no field for (`chunking_strategy`, `known_speaker_names[]`),
    /// sent as they are.
    pub extra: Vec<(String, String)>,
}

impl TranscriptionRequest {
    /// A request to transcribe `audio` with `model`.
    pub fn new(model: impl Into<String>, audio: Audio) -> Self {
        Self {
            model: model.into(),
            audio,
            ..Self::default()
        }
    }
}

/// An audio file: its name, media type and bytes.
#[derive(Clone, Default, PartialEq)]
pub struct Audio {
    /// The file's name, sent with the upload (`audio` when empty).
    pub filename: String,
    /// The file's media type (`audio/mpeg`, `audio/wav`, ...).
    pub media_type: String,
    /// The file's contents.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for Audio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audio")
            .field("filename", &self.filename)
            .field("media_type", &self.media_type)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl Audio {
    /// Audio named `filename`, its media type guessed from the extension.
    pub fn new(filename: impl Into<String>, bytes: Vec<u8>) -> Self {
        let filename = filename.into();
        let ext = filename
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        let media_type = match ext.as_str() {
            "wav" => "audio/wav",
            "mp3" | "mpga" | "mpeg" => "audio/mpeg",
            "m4a" | "mp4" => "audio/mp4",
            "ogg" | "oga" | "opus" => "audio/ogg",
            "webm" => "audio/webm",
            "flac" => "audio/flac",
            _ => "application/octet-stream",
        };
        Self {
            filename,
            media_type: media_type.into(),
            bytes,
        }
    }
}

/// The shape of a transcription answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TranscriptFormat {
    /// `{"text": ...}` with usage.
    Json,
    /// Plain text.
    Text,
    /// JSON with language, duration, segments and (if asked) words.
    VerboseJson,
    /// JSON with segments labelled by speaker.
    DiarizedJson,
    /// Subtitles.
    Srt,
    /// WebVTT subtitles.
    Vtt,
}

impl TranscriptFormat {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Text => "text",
            Self::VerboseJson => "verbose_json",
            Self::DiarizedJson => "diarized_json",
            Self::Srt => "srt",
            Self::Vtt => "vtt",
        }
    }

    /// Every format.
    pub const ALL: [Self; 6] = [
        Self::Json,
        Self::Text,
        Self::VerboseJson,
        Self::DiarizedJson,
        Self::Srt,
        Self::Vtt,
    ];

    /// The format named `s` on the wire.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The answer is plain text rather than JSON.
    pub fn is_text(self) -> bool {
        matches!(self, Self::Text | Self::Srt | Self::Vtt)
    }
}

/// A transcription.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// Everything said (for subtitle formats, the subtitles as sent).
    pub text: String,
    /// The language spoken, when the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Length of the audio in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// The stretches of speech, when the format gives them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<Segment>,
    /// Each word with its timing, when asked for (`timestamp_granularities`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<Word>,
    /// Tokens (and cost) spent, for providers that report them.
    pub usage: Usage,
    /// Seconds of audio billed, for providers that bill by duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_seconds: Option<f64>,
}

/// A stretch of speech.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// The provider's id of the segment, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// When it starts, in seconds from the start of the audio.
    pub start: f64,
    /// When it ends, in seconds from the start of the audio.
    pub end: f64,
    /// What was said.
    pub text: String,
    /// Who spoke it (diarized output: `"A"`, `"B"`, or a known speaker's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
}

/// One word with its timing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Word {
    /// The word as transcribed.
    pub word: String,
    /// When it starts, in seconds from the start of the audio.
    pub start: f64,
    /// When it ends, in seconds from the start of the audio.
    pub end: f64,
}

/// What a streamed transcription sends as it goes.
#[derive(Clone, Debug, PartialEq)]
pub enum TranscriptEvent {
    /// More text.
    TextDelta {
        /// The next piece of the text.
        text: String,
    },
    /// A finished segment (diarized streams).
    Segment(Segment),
    /// The whole transcription; the last event.
    Done(Transcript),
}
