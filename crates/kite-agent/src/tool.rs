//! Tools: what the model may call.

use kite_core::{Part, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The future a tool returns.
pub type ToolFuture<C> = Pin<Box<dyn Future<Output = Result<ToolOutput<C>, ToolError>> + Send>>;

/// A tool the model may call.
///
/// Arguments arrive already checked against [`ToolSpec::parameters`]: a call whose arguments
/// are not JSON, or do not match the schema, never reaches the tool; the model is told what
/// was wrong instead. For a tool whose arguments are a Rust type, use [`tool`].
pub trait Tool<C = ()>: Send + Sync + 'static {
    /// Name, description and JSON Schema of the arguments.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool.
    fn call(&self, args: Value, ctx: ToolContext<C>) -> ToolFuture<C>;
}

/// What a tool call knows of its run.
#[derive(Clone, Debug)]
pub struct ToolContext<C> {
    /// The run's context as it was when this turn's tools started.
    pub context: Arc<C>,
    /// The provider's id of this call.
    pub call_id: String,
    /// Cancelled when the run is: a long tool should stop early.
    pub cancel: CancellationToken,
}

/// A change to the run's context, applied after the turn's tools finish, in call order.
pub type ContextPatch<C> = Box<dyn FnOnce(&mut C) + Send>;

/// What a tool returns: content for the model, whether it is an error the model should see,
/// and optionally a change to the run's context.
pub struct ToolOutput<C = ()> {
    /// The result's text and image parts, for the model.
    pub content: Vec<Part>,
    /// Whether the model sees the result as a failure.
    pub is_error: bool,
    /// A change to the run's context, if any.
    pub patch: Option<ContextPatch<C>>,
}

impl<C> std::fmt::Debug for ToolOutput<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolOutput")
            .field("content", &self.content)
            .field("is_error", &self.is_error)
            .field("patch", &self.patch.is_some())
            .finish()
    }
}

impl<C> ToolOutput<C> {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::parts(vec![Part::text(text)])
    }

    /// A result of text and image parts.
    pub fn parts(content: Vec<Part>) -> Self {
        Self {
            content,
            is_error: false,
            patch: None,
        }
    }

    /// A JSON value, written as compact JSON text.
    pub fn json(value: &Value) -> Self {
        Self::text(value.to_string())
    }

    /// A failure the model should see and may recover from.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// Also changes the run's context.
    pub fn with_patch(mut self, patch: impl FnOnce(&mut C) + Send + 'static) -> Self {
        self.patch = Some(Box::new(patch));
        self
    }
}

impl<C> From<String> for ToolOutput<C> {
    fn from(s: String) -> Self {
        Self::text(s)
    }
}

impl<C> From<&str> for ToolOutput<C> {
    fn from(s: &str) -> Self {
        Self::text(s)
    }
}

impl<C> From<Value> for ToolOutput<C> {
    fn from(v: Value) -> Self {
        Self::json(&v)
    }
}

/// What a typed tool may return: a [`ToolOutput`] as it is, or any `Serialize` value,
/// which the model gets as text (a string as it is, anything else as compact JSON).
pub trait IntoToolOutput<C>: Send + 'static {
    /// The output the model gets.
    fn into_output(self) -> ToolOutput<C>;
}

impl<C: 'static> IntoToolOutput<C> for ToolOutput<C> {
    fn into_output(self) -> ToolOutput<C> {
        self
    }
}

impl<C, T: serde::Serialize + Send + 'static> IntoToolOutput<C> for T {
    fn into_output(self) -> ToolOutput<C> {
        match serde_json::to_value(&self) {
            Ok(Value::String(text)) => ToolOutput::text(text),
            Ok(value) => ToolOutput::json(&value),
            Err(e) => ToolOutput::error(format!("the tool's result could not be written: {e}")),
        }
    }
}

/// Why a tool failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// A failure the model should see (bad input, nothing found): it goes back to the model
    /// as an error result, and the run goes on.
    #[error("{0}")]
    Model(String),
    /// A failure of the infrastructure (a database down, a bug): the run stops with it.
    #[error(transparent)]
    Fatal(Box<dyn std::error::Error + Send + Sync>),
}

/// JSON the tool could not read or write (`?` on `serde_json`): the model is told.
impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        Self::Model(format!("JSON: {e}"))
    }
}

impl ToolError {
    /// A failure the model sees.
    pub fn model(message: impl Into<String>) -> Self {
        Self::Model(message.into())
    }

    /// A failure that stops the run.
    pub fn fatal(err: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Fatal(err.into())
    }
}

/// A tool whose arguments are the Rust type `A`; its JSON Schema is derived with `schemars`.
/// It returns a [`ToolOutput`], or any `Serialize` value ([`IntoToolOutput`]); `?` works on
/// `serde_json`'s errors.
///
/// ```
/// use kite_agent::{tool, ToolError};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// Current weather for a city.
/// #[derive(Deserialize, JsonSchema)]
/// struct Weather {
///     /// The city, e.g. "Paris".
///     city: String,
/// }
///
/// #[derive(Serialize)]
/// struct Report {
///     sky: &'static str,
///     celsius: f64,
/// }
///
/// let weather = tool("weather", "Current weather for a city", |args: Weather, _ctx| async move {
///     let celsius = if args.city == "Paris" { 21.0 } else { 18.0 };
///     Ok::<_, ToolError>(Report { sky: "sunny", celsius })
/// });
/// # let _: &dyn kite_agent::Tool<()> = &weather;
/// ```
pub fn tool<C, A, F, Fut, O>(name: &str, description: &str, f: F) -> TypedTool<C, A, F>
where
    C: Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolContext<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: IntoToolOutput<C>,
{
    TypedTool {
        spec: ToolSpec::new(name, description, schema_of::<A>()),
        f: Arc::new(f),
        _types: PhantomData,
    }
}

/// The JSON Schema of `A`, as tools send it: without the `$schema` marker.
pub fn schema_of<A: JsonSchema>() -> Value {
    let mut v = schemars::schema_for!(A).to_value();
    if let Value::Object(o) = &mut v {
        o.remove("$schema");
    }
    v
}

/// A tool made by [`tool`].
pub struct TypedTool<C, A, F> {
    spec: ToolSpec,
    f: Arc<F>,
    _types: PhantomData<fn(A, C)>,
}

impl<C, A, F> TypedTool<C, A, F> {
    /// Asks providers to hold the model to the schema exactly (OpenAI strict mode).
    pub fn strict(mut self) -> Self {
        self.spec.strict = Some(true);
        self
    }
}

impl<C, A, F, Fut, O> Tool<C> for TypedTool<C, A, F>
where
    C: Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolContext<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: IntoToolOutput<C>,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext<C>) -> ToolFuture<C> {
        let args: A = match serde_json::from_value(args) {
            Ok(a) => a,
            Err(e) => {
                let msg = format!("invalid arguments: {e}");
                return Box::pin(async move { Err(ToolError::Model(msg)) });
            }
        };
        let called = (self.f)(args, ctx);
        Box::pin(async move { called.await.map(IntoToolOutput::into_output) })
    }
}
