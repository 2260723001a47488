//! The editor's result: byte-range replacements over the original text,
//! in order, which are written out piece by piece (the source between them
//! straight from the input) instead of being copied into a new string
//! first. A rewrite then holds its input once and never a second copy of
//! it, and writing costs no more than the bytes written.

use std::io::{self, Write};

/// One replacement: the source bytes `start..end` become `text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splice {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// Non-overlapping replacements over one source text, sorted by position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patch {
    splices: Vec<Splice>,
}

impl Patch {
    /// A patch of `splices`, which must be sorted and must not overlap
    /// (the editor's `finish` checks that).
    pub(crate) fn new(splices: Vec<Splice>) -> Patch {
        debug_assert!(splices.windows(2).all(|w| w[0].end <= w[1].start));
        Patch { splices }
    }

    pub fn splices(&self) -> &[Splice] {
        &self.splices
    }

    pub fn is_empty(&self) -> bool {
        self.splices.is_empty()
    }

    /// The length of the patched text.
    pub fn len(&self, src: &[u8]) -> usize {
        let removed: usize = self.splices.iter().map(|s| s.end - s.start).sum();
        let added: usize = self.splices.iter().map(|s| s.text.len()).sum();
        src.len() - removed + added
    }

    /// Whether applying the patch to `src` changes it.
    pub fn changes(&self, src: &[u8]) -> bool {
        self.splices
            .iter()
            .any(|s| src.get(s.start..s.end) != Some(s.text.as_bytes()))
    }

    /// The patched text as one string.
    pub fn apply(&self, src: &str) -> String {
        let mut out = String::with_capacity(self.len(src.as_bytes()));
        let mut pos = 0;
        for s in &self.splices {
            out.push_str(&src[pos..s.start]);
            out.push_str(&s.text);
            pos = s.end;
        }
        out.push_str(&src[pos..]);
        out
    }

    /// Writes the patched text to `w`, the unchanged source between the
    /// splices straight from `src`. `w` should buffer: a patch is many
    /// small pieces.
    pub fn write(&self, src: &[u8], w: &mut dyn Write) -> io::Result<()> {
        let mut pos = 0;
        for s in &self.splices {
            w.write_all(&src[pos..s.start])?;
            w.write_all(s.text.as_bytes())?;
            pos = s.end;
        }
        w.write_all(&src[pos..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(parts: &[(usize, usize, &str)]) -> Patch {
        Patch::new(
            parts
                .iter()
                .map(|&(start, end, text)| Splice {
                    start,
                    end,
                    text: text.into(),
                })
                .collect(),
        )
    }

    #[test]
    fn writing_gives_the_applied_text() {
        let src = "a: 1\nb: 2\nc: 3\n";
        let p = patch(&[(0, 0, "x: 0\n"), (8, 9, "20"), (15, 15, "d: 4\n")]);
        let text = p.apply(src);
        assert_eq!(text, "x: 0\na: 1\nb: 20\nc: 3\nd: 4\n");
        assert_eq!(p.len(src.as_bytes()), text.len());
        let mut written = Vec::new();
        p.write(src.as_bytes(), &mut written)
            .expect("writes to a Vec");
        assert_eq!(written, text.as_bytes());
        assert!(p.changes(src.as_bytes()));
    }

    #[test]
    fn a_patch_that_writes_what_is_there_changes_nothing() {
        let src = "a: 1\n";
        assert!(!patch(&[(3, 4, "1")]).changes(src.as_bytes()));
        assert!(!Patch::default().changes(src.as_bytes()));
        assert_eq!(Patch::default().apply(src), src);
    }
}
