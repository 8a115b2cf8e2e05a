//! `Spans`: a `tracing` layer that keeps every span opened (name, parent,
//! fields as recorded, the events inside it), for tests of the spans the crate opens.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as seen.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The subscriber's id (ids may be reused once a span closes).
    pub id: u64,
    pub name: &'static str,
    /// The index in [`Spans::all`] of the parent span, if any.
    pub parent: Option<usize>,
    pub fields: BTreeMap<String, String>,
    /// The fields of each event emitted in this span, in order (the
    /// message as `message`).
    pub events: Vec<BTreeMap<String, String>>,
}

impl Captured {
    /// A field's value as recorded (strings bare, the rest in `Debug` form).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// See the module docs.
#[derive(Clone, Default)]
pub struct Spans(Arc<Mutex<Vec<Captured>>>);

impl Spans {
    /// Captures the spans of this thread until the guard drops.
    pub fn capture() -> (Self, DefaultGuard) {
        let spans = Spans::default();
        let subscriber = tracing_subscriber::registry().with(spans.clone());
        (spans, tracing::subscriber::set_default(subscriber))
    }

    /// Every span opened so far, in order.
    pub fn all(&self) -> Vec<Captured> {
        self.0.lock().unwrap().clone()
    }

    fn index_of(spans: &[Captured], id: &Id) -> Option<usize> {
        spans.iter().rposition(|span| span.id == id.into_u64())
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl<S> Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx.span(id).and_then(|span| span.parent()).map(|p| p.id());
        let mut spans = self.0.lock().unwrap();
        let parent = parent.and_then(|parent| Self::index_of(&spans, &parent));
        let mut fields = BTreeMap::new();
        attributes.record(&mut Fields(&mut fields));
        spans.push(Captured {
            id: id.into_u64(),
            name: attributes.metadata().name(),
            parent,
            fields,
            events: Vec::new(),
        });
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        let mut spans = self.0.lock().unwrap();
        if let Some(index) = Self::index_of(&spans, &span.id()) {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            spans[index].events.push(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some(index) = Self::index_of(&spans, id) {
            values.record(&mut Fields(&mut spans[index].fields));
        }
    }
}
