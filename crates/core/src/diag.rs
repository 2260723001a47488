//! Diagnostics: what is wrong, where (`FILE:LINE:COL: YAML.PATH`), and what to do.

use std::fmt;

/// One error or warning about an input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: String,
    /// 1-based line; 0 when the problem is about the file as a whole.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// YAML path of the offending node, such as `spec.rules[0].tolerations[1].operator`.
    pub path: String,
    pub message: String,
}

impl Diagnostic {
    /// A problem with a whole file (unreadable, not UTF-8 at an offset, ...).
    pub fn file(file: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: file.to_string(),
            line: 0,
            col: 0,
            path: String::new(),
            message: message.into(),
        }
    }
}

impl Diagnostic {
    /// A problem at byte `offset` of a parsed file, under YAML path `path`.
    pub fn at(
        tree: &kfsched_yaml::Tree,
        file: &str,
        offset: usize,
        path: &str,
        message: String,
    ) -> Diagnostic {
        let (line, col) = tree.line_col(offset);
        Diagnostic {
            file: file.to_string(),
            line,
            col,
            path: path.to_string(),
            message,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Decodes file bytes as UTF-8, pointing at the first invalid byte; also
/// refuses a bare carriage return used as a line break (see
/// [`kfsched_yaml::tree::bare_cr`]).
pub(crate) fn decode_utf8<'b>(file: &str, bytes: &'b [u8]) -> Result<&'b str, Diagnostic> {
    let text = utf8(file, bytes)?;
    if let Some(e) = kfsched_yaml::tree::bare_cr(text) {
        return Err(Diagnostic {
            file: file.to_string(),
            line: e.line,
            col: e.col,
            path: String::new(),
            message: e.message,
        });
    }
    Ok(text)
}

fn utf8<'b>(file: &str, bytes: &'b [u8]) -> Result<&'b str, Diagnostic> {
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        let prefix = std::str::from_utf8(&bytes[..valid]).unwrap_or("");
        let (line, col) = kfsched_yaml::tree::line_col(prefix, valid);
        Diagnostic {
            file: file.to_string(),
            line,
            col,
            path: String::new(),
            message: format!(
                "not valid UTF-8 (byte 0x{:02X} at offset {valid}); YAML files must be UTF-8: convert the file, e.g. `iconv -f latin1 -t utf-8`",
                bytes[valid]
            ),
        }
    })
}
