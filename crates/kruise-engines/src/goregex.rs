//! Go's `regexp.Compile` (RE2 syntax with Perl extensions, as Go 1.26 parses it) on top of the
//! `regex` crate: a pattern is parsed the way Go's `regexp/syntax` parses it and rewritten into
//! the equivalent `regex` syntax, so that exactly the patterns Go refuses are refused and a
//! compiled pattern matches what Go's would. OpenKruise compiles user regular expressions in the
//! SidecarSet webhook (`resourcesPolicy.targetContainersNameRegex`, the patch-metadata
//! whitelist's `allowedAnnotationKeyExprs`).
//!
//! What differs between the two syntaxes and is handled here: `\Q...\E` literals, octal
//! escapes, `\C`, `\u`/`\U`, `\<`/`\>` and other escapes Go does not know, repetition counts
//! above 1000, stacked repetition operators (`a**`), `{` that does not start a repetition (a
//! literal in Go), the flags Go knows (`imsU`) and its empty `(?)`, group names (Go allows one
//! twice), character classes (in Go `[`
//! and `&&` inside a class are literals), and ASCII-only `\d \s \w \b`. Messages are Go's
//! wording for the errors detected here, the `regex` crate's otherwise.

use std::fmt::Write as _;

fn hex(c: char) -> String {
    format!("\\x{{{:X}}}", c as u32)
}

/// The class items (`\x{..}-\x{..}` ranges) of Go's ASCII Perl class `\d \D \s \S \w \W`.
fn perl_class_items(letter: char) -> String {
    let ranges: &[(u32, u32)] = match letter.to_ascii_lowercase() {
        'd' => &[(0x30, 0x39)],
        's' => &[(0x9, 0xA), (0xC, 0xD), (0x20, 0x20)],
        _ => &[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    };
    let mut items = Vec::new();
    if letter.is_ascii_uppercase() {
        let mut next = 0u32;
        for (lo, hi) in ranges {
            if *lo > next {
                items.push((next, lo - 1));
            }
            next = hi + 1;
        }
        items.push((next, 0x10FFFF));
    } else {
        items.extend_from_slice(ranges);
    }
    items
        .iter()
        .map(|(lo, hi)| format!("\\x{{{lo:X}}}-\\x{{{hi:X}}}"))
        .collect()
}

struct Translator<'a> {
    src: &'a str,
    chars: Vec<char>,
    pos: usize,
    out: String,
    /// Whether the last item was a repetition operator (Go refuses stacking them).
    last_repeat: bool,
    /// Whether something repeatable precedes (not the start, `(` or `|`).
    can_repeat: bool,
    /// Where the last repetition operator started (Go names the stacked operators from there).
    repeat_start: usize,
    /// Groups opened and not yet closed.
    depth: usize,
}

fn err(code: &str, expr: &str) -> String {
    format!("error parsing regexp: {code}: `{expr}`")
}

impl Translator<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn rest(&self) -> String {
        self.chars[self.pos..].iter().collect()
    }

    fn run(mut self) -> Result<String, String> {
        while let Some(c) = self.peek() {
            match c {
                '(' => self.group()?,
                ')' => {
                    // Go's parser: a `)` without its group is refused with the whole pattern.
                    if self.depth == 0 {
                        return Err(err("unexpected )", self.src));
                    }
                    self.depth -= 1;
                    self.pos += 1;
                    self.out.push(')');
                    self.can_repeat = true;
                    self.last_repeat = false;
                }
                '|' => {
                    self.pos += 1;
                    self.out.push('|');
                    self.can_repeat = false;
                    self.last_repeat = false;
                }
                '^' | '$' | '.' => {
                    self.pos += 1;
                    self.out.push(c);
                    self.can_repeat = true;
                    self.last_repeat = false;
                }
                '*' | '+' | '?' => {
                    let start = self.pos;
                    self.pos += 1;
                    let mut op = c.to_string();
                    if self.peek() == Some('?') {
                        self.pos += 1;
                        op.push('?');
                    }
                    self.repeat(start, &op)?;
                }
                '{' => {
                    let start = self.pos;
                    match self.counted()? {
                        Some(op) => self.repeat(start, &op)?,
                        None => {
                            self.pos += 1;
                            self.literal('{');
                        }
                    }
                }
                '[' => self.class()?,
                '\\' => self.escape()?,
                _ => {
                    self.pos += 1;
                    self.literal(c);
                }
            }
        }
        if self.depth > 0 {
            return Err(err("missing closing )", self.src));
        }
        Ok(self.out)
    }

    fn literal(&mut self, c: char) {
        if c.is_ascii_alphanumeric() || c == ' ' || c == '_' {
            self.out.push(c);
        } else {
            self.out.push_str(&hex(c));
        }
        self.can_repeat = true;
        self.last_repeat = false;
    }

    fn repeat(&mut self, start: usize, op: &str) -> Result<(), String> {
        let text: String = self.chars[start..self.pos].iter().collect();
        if self.last_repeat {
            // Go names the operators from the first of the stack: `**`, `+*`, `{2}*`.
            let stacked: String = self.chars[self.repeat_start..self.pos].iter().collect();
            return Err(err("invalid nested repetition operator", &stacked));
        }
        self.repeat_start = start;
        if !self.can_repeat {
            return Err(err("missing argument to repetition operator", &text));
        }
        self.out.push_str(op);
        self.last_repeat = true;
        Ok(())
    }

    /// A counted repetition `{n}`, `{n,}` or `{n,m}` at the current position (Go's
    /// `parseRepeat`), with a trailing `?`; `None` when the text is not one (then `{` is a
    /// literal).
    fn counted(&mut self) -> Result<Option<String>, String> {
        let start = self.pos;
        let mut i = self.pos + 1;
        let digits = |i: &mut usize, chars: &[char]| -> Option<String> {
            let s = *i;
            while *i < chars.len() && chars[*i].is_ascii_digit() {
                *i += 1;
            }
            (*i > s).then(|| chars[s..*i].iter().collect())
        };
        let Some(min) = digits(&mut i, &self.chars) else {
            return Ok(None);
        };
        let mut max = Some(min.clone());
        if self.chars.get(i) == Some(&',') {
            i += 1;
            max = if self.chars.get(i) == Some(&'}') {
                None
            } else {
                match digits(&mut i, &self.chars) {
                    Some(m) => Some(m),
                    None => return Ok(None),
                }
            };
        }
        if self.chars.get(i) != Some(&'}') {
            return Ok(None);
        }
        i += 1;
        let text: String = self.chars[start..i].iter().collect();
        let parse = |s: &str| -> i64 { s.parse::<i64>().unwrap_or(i64::MAX) };
        let (lo, hi) = (parse(&min), max.as_deref().map(parse));
        if lo > 1000 || hi.is_some_and(|h| h > 1000 || h < lo) {
            return Err(err("invalid repeat count", &text));
        }
        self.pos = i;
        let mut op = match hi {
            Some(h) if h == lo => format!("{{{lo}}}"),
            Some(h) => format!("{{{lo},{h}}}"),
            None => format!("{{{lo},}}"),
        };
        if self.peek() == Some('?') {
            self.pos += 1;
            op.push('?');
        }
        Ok(Some(op))
    }

    fn group(&mut self) -> Result<(), String> {
        let start = self.pos;
        self.pos += 1;
        self.last_repeat = false;
        if self.peek() != Some('?') {
            self.out.push('(');
            self.can_repeat = false;
            self.depth += 1;
            return Ok(());
        }
        self.pos += 1;
        // Named groups: (?P<name>re) and (?<name>re).
        let named = if self.rest().starts_with("P<") {
            Some(2)
        } else if self.rest().starts_with('<') {
            Some(1)
        } else {
            None
        };
        if let Some(skip) = named {
            let rest = self.rest();
            let Some(end) = rest.find('>') else {
                return Err(err("invalid named capture", &self.src[self.byte(start)..]));
            };
            let name = &rest[skip..end];
            let whole = format!("(?{}", &rest[..=end]);
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(err("invalid named capture", &whole));
            }
            // Go allows a name twice; names do not change what matches.
            self.out.push('(');
            self.pos += rest[..=end].chars().count();
            self.can_repeat = false;
            self.depth += 1;
            return Ok(());
        }
        // Flags: (?flags) or (?flags:re), flags from imsU with one optional negation.
        let mut flags = String::new();
        let mut negated = false;
        let mut saw_flag = false;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                'i' | 'm' | 's' | 'U' => {
                    flags.push(c);
                    saw_flag = true;
                }
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                    flags.push('-');
                }
                ':' | ')' => {
                    if negated && !saw_flag {
                        break;
                    }
                    if c == ':' {
                        self.out.push_str(&format!("(?{flags}:"));
                        self.can_repeat = false;
                        self.depth += 1;
                    } else if !flags.is_empty() {
                        self.out.push_str(&format!("(?{flags})"));
                    }
                    return Ok(());
                }
                _ => break,
            }
        }
        let seen: String = self.chars[start..self.pos].iter().collect();
        Err(err("invalid or unsupported Perl syntax", &seen))
    }

    fn byte(&self, char_pos: usize) -> usize {
        self.chars[..char_pos].iter().map(|c| c.len_utf8()).sum()
    }

    /// An escape outside a class.
    fn escape(&mut self) -> Result<(), String> {
        let start = self.pos;
        let Some(c) = self.chars.get(self.pos + 1).copied() else {
            return Err(err("trailing backslash at end of expression", ""));
        };
        match c {
            'A' | 'z' => {
                self.pos += 2;
                self.out.push('\\');
                self.out.push(c);
                self.can_repeat = true;
                self.last_repeat = false;
            }
            'b' | 'B' => {
                self.pos += 2;
                self.out.push_str(&format!("(?-u:\\{c})"));
                self.can_repeat = true;
                self.last_repeat = false;
            }
            'Q' => {
                self.pos += 2;
                let rest = self.rest();
                let (lit, skip) = match rest.find("\\E") {
                    Some(i) => (&rest[..i], rest[..i].chars().count() + 2),
                    None => (rest.as_str(), rest.chars().count()),
                };
                let lit = lit.to_owned();
                self.pos += skip;
                for ch in lit.chars() {
                    self.literal(ch);
                }
            }
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => {
                self.pos += 2;
                self.out.push_str(&format!("[{}]", perl_class_items(c)));
                self.can_repeat = true;
                self.last_repeat = false;
            }
            'p' | 'P' => {
                let class = self.unicode_class(start)?;
                self.out.push_str(&class);
                self.can_repeat = true;
                self.last_repeat = false;
            }
            _ => {
                let ch = self.escaped_char(start)?;
                self.literal(ch);
            }
        }
        Ok(())
    }

    /// `\pN`, `\p{Name}`, `\PN`, `\P{^Name}` as Go reads them (the class name is passed on).
    fn unicode_class(&mut self, start: usize) -> Result<String, String> {
        let neg_letter = self.chars[self.pos + 1];
        self.pos += 2;
        let Some(c) = self.peek() else {
            return Err(err("invalid character class range", "\\p"));
        };
        let name = if c == '{' {
            let rest = self.rest();
            let Some(end) = rest.find('}') else {
                let seen: String = self.chars[start..].iter().collect();
                return Err(err("invalid character class range", &seen));
            };
            self.pos += rest[..=end].chars().count();
            rest[1..end].to_owned()
        } else {
            self.pos += 1;
            c.to_string()
        };
        let (negated, name) = match name.strip_prefix('^') {
            Some(n) => (neg_letter == 'p', n.to_owned()),
            None => (neg_letter == 'P', name),
        };
        let letter = if negated { 'P' } else { 'p' };
        let class = format!("\\{letter}{{{name}}}");
        if regex::Regex::new(&class).is_err() || name.is_empty() {
            let seen: String = self.chars[start..self.pos].iter().collect();
            return Err(err("invalid character class range", &seen));
        }
        Ok(class)
    }

    /// Go's `parseEscape` (after the cases handled by the caller): octal, `\x` hex, the C
    /// escapes and escaped ASCII punctuation; anything else is an invalid escape.
    fn escaped_char(&mut self, start: usize) -> Result<char, String> {
        let c = self.chars[self.pos + 1];
        self.pos += 2;
        let invalid = |t: &Self| {
            let seen: String = t.chars[start..t.pos].iter().collect();
            err("invalid escape sequence", &seen)
        };
        match c {
            '1'..='7' if !matches!(self.peek(), Some('0'..='7')) => Err(invalid(self)),
            '0'..='7' => {
                let mut v = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ '0'..='7') => {
                            v = v * 8 + d.to_digit(8).unwrap_or(0);
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                char::from_u32(v).ok_or_else(|| invalid(self))
            }
            'x' => {
                if self.peek() == Some('{') {
                    self.pos += 1;
                    let s = self.pos;
                    while matches!(self.peek(), Some(d) if d.is_ascii_hexdigit()) {
                        self.pos += 1;
                    }
                    let digits: String = self.chars[s..self.pos].iter().collect();
                    if self.peek() != Some('}') || digits.is_empty() {
                        return Err(invalid(self));
                    }
                    self.pos += 1;
                    u32::from_str_radix(&digits, 16)
                        .ok()
                        .filter(|v| *v <= 0x10FFFF)
                        .and_then(char::from_u32)
                        .ok_or_else(|| invalid(self))
                } else {
                    let mut v = 0;
                    for _ in 0..2 {
                        match self.peek().and_then(|d| d.to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                self.pos += 1;
                            }
                            None => return Err(invalid(self)),
                        }
                    }
                    char::from_u32(v).ok_or_else(|| invalid(self))
                }
            }
            'a' => Ok('\u{7}'),
            'f' => Ok('\u{c}'),
            'n' => Ok('\n'),
            'r' => Ok('\r'),
            't' => Ok('\t'),
            'v' => Ok('\u{b}'),
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok(c),
            _ => Err(invalid(self)),
        }
    }

    /// A bracketed class, Go's `parseClass`: `]` first is a literal, `[:name:]` a POSIX class,
    /// `\p`, `\d`-style escapes, single characters and `a-z` ranges; everything else literal.
    fn class(&mut self) -> Result<(), String> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::from("[");
        if self.peek() == Some('^') {
            self.pos += 1;
            out.push('^');
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                let seen: String = self.chars[start..].iter().collect();
                return Err(err("missing closing ]", &seen));
            };
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            let rest = self.rest();
            if rest.starts_with("[:")
                && let Some(end) = rest[2..].find(":]")
            {
                let name = &rest[2..2 + end];
                let known = [
                    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower",
                    "print", "punct", "space", "upper", "word", "xdigit",
                ];
                let bare = name.strip_prefix('^').unwrap_or(name);
                if !known.contains(&bare) {
                    let seen = &rest[..2 + end + 2];
                    return Err(err("invalid character class range", seen));
                }
                let _ = write!(out, "[:{name}:]");
                self.pos += rest[..2 + end + 2].chars().count();
                continue;
            }
            if c == '\\' {
                match self.chars.get(self.pos + 1) {
                    Some('p' | 'P') => {
                        let class = self.unicode_class(self.pos)?;
                        out.push_str(&class);
                        continue;
                    }
                    Some(d @ ('d' | 'D' | 's' | 'S' | 'w' | 'W')) => {
                        out.push_str(&perl_class_items(*d));
                        self.pos += 2;
                        continue;
                    }
                    _ => {}
                }
            }
            let lo = self.class_char(start)?;
            let mut hi = lo;
            if self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|c| *c != ']') {
                self.pos += 1;
                hi = self.class_char(start)?;
                if hi < lo {
                    let seen: String = self.chars[start..self.pos].iter().collect();
                    return Err(err("invalid character class range", &seen));
                }
            }
            out.push_str(&hex(lo));
            if hi != lo {
                out.push('-');
                out.push_str(&hex(hi));
            }
        }
        out.push(']');
        self.out.push_str(&out);
        self.can_repeat = true;
        self.last_repeat = false;
        Ok(())
    }

    fn class_char(&mut self, start: usize) -> Result<char, String> {
        match self.peek() {
            None => {
                let seen: String = self.chars[start..].iter().collect();
                Err(err("missing closing ]", &seen))
            }
            Some('\\') => {
                if self.pos + 1 >= self.chars.len() {
                    return Err(err("trailing backslash at end of expression", ""));
                }
                let s = self.pos;
                self.escaped_char(s)
            }
            Some(c) => {
                self.pos += 1;
                Ok(c)
            }
        }
    }
}

/// Go's `regexp.Compile(pattern)`: the compiled pattern, or the reason Go refuses it.
pub fn compile(pattern: &str) -> Result<regex::Regex, String> {
    let t = Translator {
        src: pattern,
        chars: pattern.chars().collect(),
        pos: 0,
        out: String::new(),
        last_repeat: false,
        can_repeat: false,
        repeat_start: 0,
        depth: 0,
    };
    let rewritten = t.run()?;
    regex::Regex::new(&rewritten).map_err(|e| format!("error parsing regexp: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_accepts() {
        for p in [
            ".*",
            "^main$",
            "app-.*",
            "a{2}",
            "a{2,}",
            "a{,5}",
            "a{",
            "x{1000}",
            "\\Qa.b\\E",
            "\\Qa.b",
            "[]a]",
            "[^]a]",
            "[a-]",
            "[[]",
            "[a&&b]",
            "[[:alpha:]]",
            "\\012",
            "\\x41",
            "\\x{263a}",
            "(?i)abc",
            "(?i-s:a.)",
            "(?)",
            "(?P<n>a)(?<m>b)",
            "(?P<n>a)(?P<n>b)",
            "a*?",
            "\\pL\\p{Greek}\\PN",
            "\\.\\-\\ \\<",
            "",
            "^*",
        ] {
            assert!(compile(p).is_ok(), "{p}: {:?}", compile(p).err());
        }
    }

    #[test]
    fn go_refuses() {
        for p in [
            "(",
            ")",
            "[",
            "*",
            "a**",
            "a*+",
            "a{2}{3}",
            "x{1001}",
            "a{3,2}",
            "\\8",
            "\\1",
            "\\C",
            "\\u0041",
            "(?x)a",
            "(?-)",
            "(?P=n)",
            "[[:bogus:]]",
            "[z-a]",
            "\\",
            "a|*",
            "(?P<>a)",
            "(?P<a-b>x)",
            "\\p{Bogus}",
        ] {
            assert!(compile(p).is_err(), "{p}");
        }
    }

    /// Go 1.26's `regexp.Compile` messages for these patterns (the whole pattern for
    /// parentheses, the stacked operators for nested repetitions).
    #[test]
    fn refusals_read_as_go_writes_them() {
        for (p, want) in [
            ("(", "error parsing regexp: missing closing ): `(`"),
            (
                "a(b(c)",
                "error parsing regexp: missing closing ): `a(b(c)`",
            ),
            ("(?i:a", "error parsing regexp: missing closing ): `(?i:a`"),
            (")", "error parsing regexp: unexpected ): `)`"),
            ("a)b", "error parsing regexp: unexpected ): `a)b`"),
            (
                "a**",
                "error parsing regexp: invalid nested repetition operator: `**`",
            ),
            (
                "a*+",
                "error parsing regexp: invalid nested repetition operator: `*+`",
            ),
            (
                "a{2}*",
                "error parsing regexp: invalid nested repetition operator: `{2}*`",
            ),
            (
                "a+??",
                "error parsing regexp: invalid nested repetition operator: `+??`",
            ),
        ] {
            assert_eq!(compile(p).err().as_deref(), Some(want), "{p}");
        }
        assert!(compile("(?i)a(b)").is_ok());
        assert!(compile("(?P<n>a)(b)").is_ok());
    }

    #[test]
    fn matches_like_go() {
        assert!(compile("^\\d+$").unwrap().is_match("123"));
        assert!(!compile("^\\d+$").unwrap().is_match("١٢٣"));
        assert!(compile("\\Qa.b\\E").unwrap().is_match("xa.by"));
        assert!(!compile("\\Qa.b\\E").unwrap().is_match("axb"));
        assert!(compile("[a&&b]").unwrap().is_match("&"));
        assert!(compile("key").unwrap().is_match("my-key-x"));
    }
}
