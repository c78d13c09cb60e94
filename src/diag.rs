//! Diagnostics: one error type for every stage, rendered like rustc.
//!
//! A [`Diagnostic`] carries a primary [`Label`] (the span that is wrong), any number of
//! secondary labels (related places, e.g. the first assignment of a local), and notes.
//! Stages collect diagnostics instead of stopping at the first one; the caller receives them
//! together as [`Diagnostics`], which knows the source text and renders them with the source
//! line and carets. Nothing here depends on a later stage.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A byte range in one source file.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// Offset of the first byte.
    pub start: u32,
    /// Offset one past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end` (byte offsets).
    pub fn new(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    /// The smallest span that covers both.
    pub fn cover(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl From<ruff_text_size::TextRange> for Span {
    fn from(r: ruff_text_size::TextRange) -> Span {
        Span {
            start: r.start().into(),
            end: r.end().into(),
        }
    }
}

/// How serious a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Severity {
    /// The program is ill-formed; nothing is produced.
    Error,
    /// Something is suspicious but code is still produced.
    Warning,
}

/// A span with a message explaining its part in a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What about it (may be empty).
    pub message: String,
}

/// One problem found in a program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A stable code such as `E0201`; the list lives in `docs/semantics.md`.
    pub code: String,
    /// One line saying what is wrong.
    pub message: String,
    /// The span that is wrong.
    pub primary: Label,
    /// Related places.
    pub secondary: Vec<Label>,
    /// Further explanation or a suggestion.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error with a code, message and primary span.
    pub fn error(code: &str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code: code.to_string(),
            message: message.into(),
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Sets the message shown under the primary span.
    pub fn with_label(mut self, message: impl Into<String>) -> Diagnostic {
        self.primary.message = message.into();
        self
    }

    /// Adds a related span.
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

/// A source file: a name for messages and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The name shown in diagnostics, usually the path.
    pub name: String,
    /// The whole text.
    pub text: Arc<str>,
    line_starts: Arc<[u32]>,
}

impl SourceFile {
    /// Wraps a source text.
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> SourceFile {
        let text: Arc<str> = text.into();
        let mut starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i as u32 + 1);
            }
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts: starts.into(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let col = self.text[start..offset as usize].chars().count();
        (line + 1, col + 1)
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts[line - 1] as usize;
        let end = self
            .line_starts
            .get(line)
            .map(|&e| e as usize)
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// Renders one diagnostic in rustc's style.
    pub fn render(&self, d: &Diagnostic) -> String {
        let mut out = String::new();
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        out.push_str(&format!("{sev}[{}]: {}\n", d.code, d.message));
        let mut labels: Vec<(&Label, bool)> = vec![(&d.primary, true)];
        labels.extend(d.secondary.iter().map(|l| (l, false)));
        let width = labels
            .iter()
            .map(|(l, _)| self.line_col(l.span.start).0.to_string().len())
            .max()
            .unwrap_or(1);
        let pad = " ".repeat(width);
        let (line, col) = self.line_col(d.primary.span.start);
        out.push_str(&format!("{pad}--> {}:{line}:{col}\n", self.name));
        out.push_str(&format!("{pad} |\n"));
        // Secondary labels in source order around the primary one.
        labels.sort_by_key(|(l, _)| l.span.start);
        for (label, primary) in labels {
            let (line, col) = self.line_col(label.span.start);
            let text = self.line_text(line);
            let (end_line, end_col) = self.line_col(label.span.end.max(label.span.start));
            let len = if end_line == line {
                end_col.saturating_sub(col).max(1)
            } else {
                text.chars().count().saturating_sub(col - 1).max(1)
            };
            let mark = if primary { "^" } else { "-" };
            out.push_str(&format!("{line:>width$} | {text}\n"));
            let msg = if label.message.is_empty() {
                String::new()
            } else {
                format!(" {}", label.message)
            };
            out.push_str(&format!(
                "{pad} | {}{}{msg}\n",
                " ".repeat(col - 1),
                mark.repeat(len)
            ));
        }
        for note in &d.notes {
            out.push_str(&format!("{pad} = note: {note}\n"));
        }
        out
    }
}

/// Diagnostics for one source file: the error value of parsing and checking.
#[derive(Clone, Debug)]
pub struct Diagnostics {
    /// The file they are about.
    pub file: SourceFile,
    /// Every diagnostic, in the order found.
    pub list: Vec<Diagnostic>,
}

impl Diagnostics {
    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(|d| d.severity == Severity::Error)
    }

    /// Renders all diagnostics, each followed by a blank line.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for d in &self.list {
            s.push_str(&self.file.render(d));
            s.push('\n');
        }
        s
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render().trim_end())
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_primary_and_secondary_in_source_order() {
        let src = SourceFile::new("k.py", "x = 1\ny = 2.5\nx = y\n");
        let d = Diagnostic::error("E0001", Span::new(18, 19), "bad")
            .with_label("here")
            .with_secondary(Span::new(0, 1), "first")
            .with_note("a note");
        let r = src.render(&d);
        assert_eq!(
            r,
            "error[E0001]: bad\n --> k.py:3:5\n  |\n1 | x = 1\n  | - first\n3 | x = y\n  |     ^ here\n  = note: a note\n"
        );
    }

    #[test]
    fn line_col_counts_characters() {
        let src = SourceFile::new("k.py", "a\n\u{e9}b = 1\n");
        assert_eq!(src.line_col(0), (1, 1));
        assert_eq!(src.line_col(4), (2, 2));
    }
}
