//! `limitlab attack --script NAME --limit L --window W [--budget N] [--seed S]`: searches for the
//! arrival pattern with the highest overshoot and the one with the highest false-rejection rate,
//! prints them with their figures, saves each into the output directory (`--out`) as a trace
//! `attack_NAME_GOAL.csv` with a scenario file `attack_NAME_GOAL.toml` that `limitlab run` replays,
//! and draws `attack_NAME.{png,svg}` there. Files that cannot be written are left out with a warning;
//! the report prints all the same.
use std::io::Write;
use std::path::Path;

use super::{emit, FormatArgs};
use crate::output::{file_part, OutDir};
use crate::report::attack::AttackReport;
use crate::report::attack_plot::{self, Line, Panel};
use crate::report::Format;
use limitlab_emulator::{Error, Result};
use limitlab_engine::attack::{self, origin_ms, Found, Goal, Settings, DEFAULT_ITERATIONS};
use limitlab_engine::metrics::ExactLog;
use limitlab_engine::traffic::write_csv;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The script to attack: a spec file (my_limiter.toml), or a built-in name: fixed_window,
    /// sliding_window, sliding_log, token_bucket, gcra, or one of the seed article's
    /// (seed_fixed_window, ...).
    #[arg(long)]
    pub script: String,
    #[command(flatten)]
    pub policy: super::PolicyArgs,
    /// The most requests a pattern may send (default: four times the limit).
    #[arg(long)]
    pub budget: Option<u32>,
    /// The search's seed: the same seed gives the same patterns and the same output.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Mutated patterns scored per goal after the starting ones.
    #[arg(long, default_value_t = DEFAULT_ITERATIONS)]
    pub iterations: u32,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// A validated `attack`.
#[derive(Debug)]
pub struct Plan {
    pub settings: Settings,
    pub format: Format,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let limiter = a.policy.limiter(&a.script)?;
        let budget = a.budget.unwrap_or_else(|| attack::default_budget(limiter.params().limit));
        let settings = Settings::new(limiter, budget, a.seed, a.iterations)?;
        Ok(Plan { settings, format: a.format.format() })
    }
}

/// Runs the search and writes its files into `files`.
pub fn run(plan: Plan, files: &OutDir, out: &mut dyn Write) -> Result<()> {
    let s = &plan.settings;
    let what = format!("searching {} patterns per goal", s.iterations);
    let spinner = crate::progress::Spinner::start(plan.format == Format::Json, "attack", &what);
    let found = attack::attack(s)?;
    drop(spinner);
    let mut report = AttackReport::new(s, &found);
    let name = s.limiter.name();
    let part = file_part(name);
    for (f, r) in found.iter().zip(report.results.iter_mut()) {
        let stem = format!("attack_{part}_{}", f.goal.name());
        let csv = files.write(&format!("{stem}.csv"), |p| write_csv(p, &f.arrivals));
        // The scenario names itself by its final path (it is written under a temporary one).
        let toml_name = format!("{stem}.toml");
        let toml_path = files.dir().join(&toml_name);
        let toml = files.write(&toml_name, |p| {
            write_file(p, &scenario(s, f, &stem, &toml_path, r.overshoot, r.false_rejection_rate))
        });
        if let (Some(csv), Some(toml)) = (csv, toml) {
            r.trace = Some(csv.display().to_string());
            r.scenario = Some(toml.display().to_string());
        }
    }
    let panels: Vec<Panel> = found.iter().zip(&report.results).map(|(f, r)| panel(s, f, &r.headline_short())).collect();
    let p = s.limiter.params();
    let title = format!(
        "limitlab attack: {name}, limit {} per {} ms, budget {}, seed {}",
        p.limit, p.window_ms, s.budget, s.seed
    );
    let names = [format!("attack_{part}.png"), format!("attack_{part}.svg")];
    let drawn = files.write_all(&[&names[0], &names[1]], |paths| {
        attack_plot::write(&title, p.limit, p.window_ms, &panels, &paths[0], &paths[1])
    });
    if let Some(paths) = drawn {
        report.plots = paths.iter().map(|p| p.display().to_string()).collect();
    }
    emit(out, &report.render(plan.format))
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// A scenario file that replays a saved pattern with `limitlab run`.
fn scenario(s: &Settings, f: &Found, stem: &str, path: &Path, overshoot: f64, rate: f64) -> String {
    let p = s.limiter.params();
    let name = s.limiter.name();
    let burst = p.burst.map(|b| format!(" --burst {b}")).unwrap_or_default();
    let script = match s.limiter.variant() {
        Some(_) => name.to_string(),
        None => s.limiter.spec().origin.display().to_string(),
    };
    let mut t = String::new();
    t.push_str(&format!(
        "# Found by `limitlab attack --script {script} --limit {} --window {}{burst} --budget {} --seed {} --iterations {}`:\n",
        p.limit, p.window_ms, s.budget, s.seed, s.iterations
    ));
    t.push_str(&match f.goal {
        Goal::Overshoot => format!("# the pattern with the highest overshoot it found ({overshoot:.2}).\n"),
        Goal::FalseRejections => {
            format!("# the pattern with the highest false-rejection rate it found ({rate:.3} per request).\n")
        }
    });
    t.push_str(&format!("# Replay: limitlab run {}\n", path.display()));
    t.push_str(&format!("name = \"{stem}\"\n"));
    t.push_str(&format!(
        "description = \"limitlab attack on {name}: {} ({} requests)\"\n",
        f.goal.title().to_lowercase(),
        f.arrivals.len()
    ));
    t.push_str(&format!("limit = {}\nwindow_ms = {}\n", p.limit, p.window_ms));
    if let Some(b) = p.burst {
        t.push_str(&format!("burst = {b}\n"));
    }
    t.push_str(&limitlab_engine::sim::replay_file::scripts_line(&s.limiter, path.parent().unwrap_or(Path::new("."))));
    if let Some(a) = f.arrivals.first() {
        t.push_str(&format!("start_ms = {}\n", a.at.as_millis().0));
    }
    t.push_str(&format!("\n[traffic]\nkind = \"trace\"\npath = \"{stem}.csv\"\nrebase = \"absolute\"\n"));
    t
}

/// One goal's plot panel: requests sent, admitted by the script and by an exact sliding log, per
/// trailing window.
fn panel(s: &Settings, f: &Found, caption: &str) -> Panel {
    let p = s.limiter.params();
    let origin = origin_ms(p.window_ms);
    let ms: Vec<i64> = f.arrivals.iter().map(|a| a.at.as_millis().0 - origin).collect();
    let admitted: Vec<i64> = ms.iter().zip(&f.allowed).filter(|(_, &ok)| ok).map(|(&t, _)| t).collect();
    let mut exact = ExactLog::new(p);
    let exact_admitted: Vec<i64> = ms.iter().copied().filter(|&t| exact.decide(0, t, 1)).collect();
    let w = p.window_ms as i64;
    let (from, to) = attack_plot::span(&ms, w);
    Panel {
        caption: caption.to_string(),
        sent: Line { name: "requests sent".into(), points: attack_plot::trailing(&ms, w, from, to) },
        exact: Line {
            name: "admitted by an exact sliding log".into(),
            points: attack_plot::trailing(&exact_admitted, w, from, to),
        },
        script: Line {
            name: format!("admitted by {}", s.limiter.name()),
            points: attack_plot::trailing(&admitted, w, from, to),
        },
    }
}
