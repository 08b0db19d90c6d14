//! Spec parsing: every mistake names the file, line and field.
use super::*;

struct Mem(Vec<(&'static str, &'static str)>);

impl Files for Mem {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        self.0
            .iter()
            .find(|(p, _)| Path::new(p) == path)
            .map(|(_, b)| b.to_string())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"))
    }
}

const GOOD: &str = r#"name = "fw"
family = "fixed_window"
[policy]
limit = 10
window_ms = 1000
[scripts]
main = "fw.lua"
[[call]]
name = "hits"
script = "main"
keys = ["rl:{${subject}}:${window_index}"]
args = ["${window_ms}", "${cost}"]
[decision]
allowed = "hits <= limit"
remaining = "max(limit - hits, 0)"
"#;

fn parse(text: &str) -> Result<Spec> {
    Spec::from_toml(text, Path::new("my.toml"), Path::new(""), &Mem(vec![("fw.lua", "return 1")]))
}

#[test]
fn a_good_spec_parses() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.name, "fw");
    assert_eq!(s.family, Some(Algorithm::FixedWindow));
    assert!(s.uses_cost());
    assert!(!s.uses_burst());
    assert_eq!(
        s.reports(),
        Reports {
            remaining: true,
            retry_after: false,
            reset: false,
            granted: false,
            reset_means: crate::spec::ResetMeans::Quota
        }
    );
    assert_eq!(s.overshoot_bound(&s.policy), Some(2.0));
}

/// (what to change in GOOD, the message's expected beginning and a part of it)
#[test]
fn mistakes_name_file_line_and_field() {
    let cases: [(&str, &str, &str); 8] = [
        ("limit = 10", "limit = 10\ncolour = 3", "colour"),
        ("fw.lua", "nope.lua", "my.toml:7: field `scripts.main`: cannot read nope.lua"),
        (
            "${window_index}",
            "${window_idx}",
            "my.toml:11: field `call[1].keys[1]`: in `${window_idx}`: unknown variable `window_idx`",
        ),
        ("script = \"main\"", "script = \"other\"", "my.toml:10: field `call[1].script`: no script named `other`"),
        ("hits <= limit", "hits <= ", "my.toml:14: field `decision.allowed`: the expression ends too early"),
        ("family = \"fixed_window\"", "family = \"leaky\"", "my.toml:2: field `family`: unknown family `leaky`"),
        ("limit = 10", "limit = 0", "my.toml:4: field `policy.limit`: must be a positive integer, got 0"),
        ("name = \"hits\"\n", "name = \"limit\"\n", "my.toml:9: field `call[1].name`"),
    ];
    for (from, to, want) in cases {
        let text = GOOD.replacen(from, to, 1);
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains(want), "{to}: {e}");
    }
}

#[test]
fn a_reply_index_the_script_never_returns_is_named_at_run_time() {
    use crate::backend::emulated::EmulatedBackend;
    let text = GOOD.replace("hits <= limit", "hits[3] <= limit");
    let spec = Arc::new(parse(&text).unwrap());
    let l = crate::limiter::Limiter::from_spec(spec, Params::new(10, 1000)).unwrap();
    let mut b = EmulatedBackend::default();
    let mut s = l.session();
    let e = l.call(&mut b, &mut s, "u1", 1_000, 1).unwrap_err().to_string();
    assert!(e.starts_with("my.toml:14: field `decision.allowed`: index 3 of 1, which is not an array"), "{e}");
    assert!(e.contains("subject `u1`, now_ms 1000, cost 1"), "{e}");
}

#[test]
fn a_script_error_names_the_users_file_line_and_the_request() {
    use crate::backend::emulated::EmulatedBackend;
    let text = GOOD.replace("hits <= limit", "hits[1] <= limit").replace("max(limit - hits, 0)", "limit - hits[1]");
    let body = "local n = redis.call('INCR', KEYS[1])\nif n > 1 then\n  return nope + 1\nend\nreturn {n}\n";
    let spec =
        Spec::from_toml(&text, Path::new("dir/my.toml"), Path::new("dir"), &Mem(vec![("dir/fw.lua", body)])).unwrap();
    let l = crate::limiter::Limiter::from_spec(Arc::new(spec), Params::new(10, 1000)).unwrap();
    let mut b = EmulatedBackend::default();
    let mut s = l.session();
    assert!(l.call(&mut b, &mut s, "u1", 1_000, 1).unwrap().allowed);
    let e = l.call(&mut b, &mut s, "u1", 1_001, 1).unwrap_err();
    let Error::Script { reply, at, request } = &e else { panic!("{e}") };
    assert!(
        reply.starts_with("ERR user_script:3: Script attempted to access nonexistent global variable 'nope'"),
        "{reply}"
    );
    assert_eq!(at, "dir/fw.lua:3: return nope + 1");
    assert_eq!(request, "request (subject `u1`, now_ms 1001, cost 1)");
}

#[test]
fn an_adapter_says_which_fields_it_reports() {
    let files = Mem(vec![("a.lua", "function request(req) return {allowed = true} end"), ("fw.lua", "return 1")]);
    let spec = |extra: &str| {
        let text = format!("name = \"a\"\nadapter = \"a.lua\"\n{extra}\n[policy]\nlimit = 1\nwindow_ms = 10\n");
        Spec::from_toml(&text, Path::new("a.toml"), Path::new(""), &files)
    };
    assert_eq!(
        spec("").unwrap().reports(),
        Reports {
            remaining: true,
            retry_after: true,
            reset: true,
            granted: false,
            reset_means: crate::spec::ResetMeans::Quota
        }
    );
    assert_eq!(
        spec("reports = [\"remaining\"]").unwrap().reports(),
        Reports {
            remaining: true,
            retry_after: false,
            reset: false,
            granted: false,
            reset_means: crate::spec::ResetMeans::Quota
        }
    );
    let e = spec("reports = [\"left\"]").unwrap_err().to_string();
    assert!(e.starts_with("a.toml:3: field `reports`: unknown decision field `left`"), "{e}");
    let e = parse(&GOOD.replace("family = \"fixed_window\"", "reports = [\"remaining\"]")).unwrap_err().to_string();
    assert!(e.contains("field `reports`: is for adapters"), "{e}");
}

#[test]
fn raw_keys_reach_the_script_as_given_and_the_others_get_the_prefix() {
    use crate::backend::emulated::EmulatedBackend;
    // KEYS[2] is "" when the client has no dynamic limit: passed as given, not as "ll:...:".
    let text = GOOD
        .replace("keys = [\"rl:{${subject}}:${window_index}\"]", "keys = [\"rl:{${subject}}\", \"\"]\nraw_keys = [2]");
    let body = "return {KEYS[1], KEYS[2], #KEYS[2]}";
    let files = Mem(vec![("fw.lua", body)]);
    let spec = Spec::from_toml(
        &text.replace("hits <= limit", "hits[3] == 0").replace("max(limit - hits, 0)", "0"),
        Path::new("my.toml"),
        Path::new(""),
        &files,
    )
    .unwrap();
    let l = crate::limiter::Limiter::from_spec(Arc::new(spec), Params::new(10, 1000)).unwrap();
    let mut b = EmulatedBackend::with_prefix(limitlab_emulator::Emulator::new(), "ll:0123:");
    let mut s = crate::spec::exec::Session::recording();
    assert!(l.call(&mut b, &mut s, "u1", 1_000, 1).unwrap().allowed, "KEYS[2] is empty");
    let calls = s.take_calls();
    assert_eq!(calls[0].keys, ["ll:0123:rl:{u1}", ""]);
    // The pipelined path renders the same.
    let (mut keys, mut args) = (Vec::new(), Vec::new());
    l.render_single("ll:0123:", "u1", 1_000, 1, &mut keys, &mut args).unwrap();
    assert_eq!(keys, ["ll:0123:rl:{u1}", ""]);
    // An index that names no key is a mistake in the spec.
    let e = parse(&GOOD.replace("args = [", "raw_keys = [2]\nargs = [")).unwrap_err().to_string();
    assert!(e.contains("field `call[1].raw_keys`: 2 is not the number of one of the call's 1 keys"), "{e}");
}
