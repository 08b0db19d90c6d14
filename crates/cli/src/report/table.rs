//! A small table type rendered as aligned human text or as markdown; every report goes through it
//! so both formats always show the same cells.
use std::fmt::Write as _;

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A titled table with optional notes printed under it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub align: Vec<Align>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

impl Table {
    /// A table whose first column is left-aligned and the others right-aligned (labels, then numbers).
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Table {
        let align = (0..headers.len()).map(|i| if i == 0 { Align::Left } else { Align::Right }).collect();
        Table {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            align,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn note(&mut self, n: impl Into<String>) {
        self.notes.push(n.into());
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                if i < w.len() {
                    w[i] = w[i].max(c.chars().count());
                }
            }
        }
        w
    }

    /// Aligned columns separated by two spaces, a rule under the header, notes after.
    pub fn to_text(&self) -> String {
        let w = self.widths();
        let mut out = String::new();
        if !self.title.is_empty() {
            out.push_str(&self.title);
            out.push('\n');
        }
        let line = |cells: &[String], out: &mut String| {
            let mut s = String::new();
            for (i, width) in w.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = width - c.chars().count().min(*width);
                if i > 0 {
                    s.push_str("  ");
                }
                match self.align.get(i).copied().unwrap_or(Align::Left) {
                    Align::Left => {
                        s.push_str(c);
                        s.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        s.extend(std::iter::repeat_n(' ', pad));
                        s.push_str(c);
                    }
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&self.headers, &mut out);
        let total: usize = w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
        out.extend(std::iter::repeat_n('-', total));
        out.push('\n');
        for r in &self.rows {
            line(r, &mut out);
        }
        for n in &self.notes {
            out.push_str(n);
            out.push('\n');
        }
        out
    }

    /// A GitHub-flavoured markdown table under a `###` title, notes as a paragraph after it.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        if !self.title.is_empty() {
            let _ = writeln!(out, "### {}\n", self.title);
        }
        let esc = |c: &str| c.replace('|', "\\|");
        out.push('|');
        for h in &self.headers {
            let _ = write!(out, " {} |", esc(h));
        }
        out.push_str("\n|");
        for i in 0..self.headers.len() {
            out.push_str(match self.align.get(i).copied().unwrap_or(Align::Left) {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        out.push('\n');
        for r in &self.rows {
            out.push('|');
            for i in 0..self.headers.len() {
                let _ = write!(out, " {} |", esc(r.get(i).map(String::as_str).unwrap_or("")));
            }
            out.push('\n');
        }
        // Each note is its own paragraph (consecutive markdown lines would run together).
        for n in &self.notes {
            out.push('\n');
            out.push_str(n);
            out.push('\n');
        }
        out
    }
}

/// An integer with `,` between thousands, as the seed article's English rendering writes them.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_markdown_show_the_same_cells() {
        let mut t = Table::new("T", &["algorithm", "n"]);
        t.row(vec!["fixed_window".into(), "200".into()]);
        t.row(vec!["x".into(), "5".into()]);
        t.note("a note");
        assert_eq!(
            t.to_text(),
            "T\nalgorithm       n\n-----------------\nfixed_window  200\nx               5\na note\n"
        );
        assert_eq!(
            t.to_markdown(),
            "### T\n\n| algorithm | n |\n|---|---:|\n| fixed_window | 200 |\n| x | 5 |\n\na note\n"
        );
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(92184), "92,184");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
