//! INFO [section ...] with Redis 7.0.15's sections, field names and order.
//!
//! What the emulator knows is exact: the version and mode, the clients, the maxmemory settings,
//! the keyspace (keys and keys with a TTL per database), the cluster flag, the virtual clock's time
//! and uptime. Fields about the process and the machine (pid, CPU, RSS, network counters) carry a
//! fixed, plausible value: a client that parses INFO finds every field it looks for. `used_memory`
//! is a fresh server's plus the keys' MEMORY USAGE.
use std::fmt::Write as _;

use crate::command_spec::{eq_ic, CommandSpec, KeySpec};
use crate::core::{Core, DATABASES};
use crate::reply::Reply;

pub static COMMANDS: &[CommandSpec] =
    &[CommandSpec { name: "info", arity: -1, flags: 0, keys: KeySpec::NONE, handler: info }];

/// The sections in the order Redis prints them, and whether `INFO` / `INFO default` includes each
/// (`INFO all` is every one of them, `INFO everything` too: there are no module sections).
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

use crate::admission::USED_MEMORY_STARTUP;

/// INFO [section ...]: no section is `default`; `all` and `everything` are every section; names are
/// matched without regard to case and unknown ones are ignored (Redis 7.0's `genInfoSectionDict`).
fn info(core: &mut Core, a: &[&[u8]]) -> Reply {
    let mut wanted = [false; SECTIONS.len()];
    let mut add_default = a.len() == 1;
    for arg in &a[1..] {
        if eq_ic(arg, "default") {
            add_default = true;
        } else if eq_ic(arg, "all") || eq_ic(arg, "everything") {
            wanted = [true; SECTIONS.len()];
        } else if let Some(i) = SECTIONS.iter().position(|(n, _)| eq_ic(arg, n)) {
            wanted[i] = true;
        }
    }
    if add_default {
        for (i, (_, default)) in SECTIONS.iter().enumerate() {
            wanted[i] |= *default;
        }
    }
    let mut out = String::new();
    for (i, (name, _)) in SECTIONS.iter().enumerate() {
        if !wanted[i] {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        section(core, name, &mut out);
    }
    // A verbatim string under RESP3 (`addReplyVerbatim`), a bulk string under RESP2.
    Reply::Verbatim(out.into_bytes())
}

/// Appends `k:v\r\n`.
fn kv(out: &mut String, k: &str, v: impl std::fmt::Display) {
    let _ = write!(out, "{k}:{v}\r\n");
}

/// Redis's `bytesToHuman`.
fn human(n: u64) -> String {
    let d = n as f64;
    if n < 1024 {
        format!("{n}B")
    } else if d < 1024.0 * 1024.0 {
        format!("{:.2}K", d / 1024.0)
    } else if d < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", d / (1024.0 * 1024.0))
    } else {
        format!("{:.2}G", d / (1024.0 * 1024.0 * 1024.0))
    }
}

fn section(core: &mut Core, name: &str, out: &mut String) {
    let now_ms = core.now_ms();
    match name {
        "server" => server(core, now_ms, out),
        "clients" => clients(core, now_ms, out),
        "memory" => memory(core, now_ms, out),
        "persistence" => persistence(core, now_ms, out),
        "stats" => stats(core, now_ms, out),
        "replication" => replication(core, now_ms, out),
        "cpu" => {
            out.push_str("# CPU\r\n");
            for k in [
                "used_cpu_sys",
                "used_cpu_user",
                "used_cpu_sys_children",
                "used_cpu_user_children",
                "used_cpu_sys_main_thread",
                "used_cpu_user_main_thread",
            ] {
                kv(out, k, "0.000000");
            }
        }
        "modules" => out.push_str("# Modules\r\n"),
        "commandstats" => {
            out.push_str("# Commandstats\r\n");
            for (name, c) in core.stats.commands() {
                let per_call = if c.calls == 0 { 0.0 } else { c.usec as f64 / c.calls as f64 };
                let _ = write!(
                    out,
                    "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                    c.calls, c.usec, c.rejected, c.failed
                );
            }
        }
        "errorstats" => {
            out.push_str("# Errorstats\r\n");
            let mut errors: Vec<(&String, &u64)> = core.stats.errors.iter().collect();
            errors.sort();
            for (code, n) in errors {
                let _ = write!(out, "errorstat_{code}:count={n}\r\n");
            }
        }
        "latencystats" => {
            out.push_str("# Latencystats\r\n");
            for (name, c) in core.stats.commands() {
                if c.calls == 0 {
                    continue;
                }
                let per_call = c.usec as f64 / c.calls as f64;
                let _ = write!(
                    out,
                    "latency_percentiles_usec_{name}:p50={per_call:.3},p99={per_call:.3},p99.9={per_call:.3}\r\n"
                );
            }
        }
        "cluster" => {
            out.push_str("# Cluster\r\n");
            kv(out, "cluster_enabled", core.cluster as u8);
        }
        "keyspace" => {
            out.push_str("# Keyspace\r\n");
            for db in 0..DATABASES {
                let d = core.db_at(db);
                d.purge_expired(now_ms);
                if d.is_empty() {
                    continue;
                }
                let keys = d.len();
                let ttls: Vec<i64> = d.map.values().filter_map(|e| e.expire_at).map(|t| (t - now_ms).max(0)).collect();
                let avg = if ttls.is_empty() { 0 } else { ttls.iter().sum::<i64>() / ttls.len() as i64 };
                let _ = write!(out, "db{db}:keys={keys},expires={},avg_ttl={avg}\r\n", ttls.len());
            }
        }
        _ => {}
    }
}

/// INFO's `server` section (Server).
fn server(core: &mut Core, now_ms: i64, out: &mut String) {
    out.push_str("# Server\r\n");
    let uptime = (now_ms - core.started_ms).max(0) / 1000;
    for (k, v) in [
        ("redis_version", "7.0.15"),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", "0"),
        ("redis_build_id", "0"),
        ("redis_mode", if core.cluster { "cluster" } else { "standalone" }),
        ("os", "limitlab"),
        ("arch_bits", "64"),
        ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", "epoll"),
        ("atomicvar_api", "c11-builtin"),
        ("gcc_version", "0.0.0"),
        ("process_id", "1"),
        ("process_supervised", "no"),
        ("run_id", "0000000000000000000000000000000000000000"),
    ] {
        kv(out, k, v);
    }
    kv(out, "tcp_port", String::from_utf8_lossy(core.settings.get("port")));
    kv(out, "server_time_usec", core.now_us());
    kv(out, "uptime_in_seconds", uptime);
    kv(out, "uptime_in_days", uptime / 86400);
    kv(out, "hz", 10);
    kv(out, "configured_hz", 10);
    kv(out, "lru_clock", (now_ms / 1000) & ((1 << 24) - 1));
    kv(out, "executable", "");
    kv(out, "config_file", "");
    kv(out, "io_threads_active", 0);
}

/// INFO's `clients` section (Clients).
fn clients(core: &mut Core, _now_ms: i64, out: &mut String) {
    out.push_str("# Clients\r\n");
    kv(out, "connected_clients", core.connections().count());
    kv(out, "cluster_connections", 0);
    kv(out, "maxclients", core.settings.int("maxclients"));
    for (k, v) in [
        ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", 0),
        ("blocked_clients", core.blocking.count() + core.postponed.len()),
        ("tracking_clients", core.tracking.clients),
        ("clients_in_timeout_table", 0),
    ] {
        kv(out, k, v);
    }
}

/// INFO's `memory` section (Memory).
fn memory(core: &mut Core, _now_ms: i64, out: &mut String) {
    out.push_str("# Memory\r\n");
    let used = core.used_memory();
    let dataset = used - USED_MEMORY_STARTUP;
    let maxmemory = core.settings.maxmemory().max(0) as u64;
    let policy = String::from_utf8_lossy(core.settings.get("maxmemory-policy")).into_owned();
    kv(out, "used_memory", used);
    kv(out, "used_memory_human", human(used));
    kv(out, "used_memory_rss", used);
    kv(out, "used_memory_rss_human", human(used));
    kv(out, "used_memory_peak", used);
    kv(out, "used_memory_peak_human", human(used));
    kv(out, "used_memory_peak_perc", "100.00%");
    kv(out, "used_memory_overhead", USED_MEMORY_STARTUP);
    kv(out, "used_memory_startup", USED_MEMORY_STARTUP);
    kv(out, "used_memory_dataset", dataset);
    kv(out, "used_memory_dataset_perc", format!("{:.2}%", 100.0 * dataset as f64 / used.max(1) as f64));
    for (k, v) in [
        ("allocator_allocated", used.to_string()),
        ("allocator_active", used.to_string()),
        ("allocator_resident", used.to_string()),
        ("total_system_memory", "0".into()),
        ("total_system_memory_human", "0B".into()),
        ("used_memory_lua", "31744".into()),
        ("used_memory_vm_eval", "31744".into()),
        ("used_memory_lua_human", "31.00K".into()),
        ("used_memory_scripts_eval", "0".into()),
        ("number_of_cached_scripts", core.scripting_counts.0.to_string()),
        ("number_of_functions", core.scripting_counts.1.to_string()),
        ("number_of_libraries", core.scripting_counts.2.to_string()),
        ("used_memory_vm_functions", "32768".into()),
        ("used_memory_vm_total", "64512".into()),
        ("used_memory_vm_total_human", "63.00K".into()),
        ("used_memory_functions", "184".into()),
        ("used_memory_scripts", "184".into()),
        ("used_memory_scripts_human", "184B".into()),
        ("maxmemory", maxmemory.to_string()),
        ("maxmemory_human", human(maxmemory)),
        ("maxmemory_policy", policy.clone()),
        ("allocator_frag_ratio", "1.00".into()),
        ("allocator_frag_bytes", "0".into()),
        ("allocator_rss_ratio", "1.00".into()),
        ("allocator_rss_bytes", "0".into()),
        ("rss_overhead_ratio", "1.00".into()),
        ("rss_overhead_bytes", "0".into()),
        ("mem_fragmentation_ratio", "1.00".into()),
        ("mem_fragmentation_bytes", "0".into()),
        ("mem_not_counted_for_evict", "0".into()),
        ("mem_replication_backlog", "0".into()),
        ("mem_total_replication_buffers", "0".into()),
        ("mem_clients_slaves", "0".into()),
        ("mem_clients_normal", "0".into()),
        ("mem_cluster_links", "0".into()),
        ("mem_aof_buffer", "0".into()),
        ("mem_allocator", "jemalloc-5.3.0".into()),
        ("active_defrag_running", "0".into()),
        ("lazyfree_pending_objects", "0".into()),
        ("lazyfreed_objects", "0".into()),
    ] {
        kv(out, k, v);
    }
}

/// INFO's `persistence` section (Persistence).
fn persistence(core: &mut Core, _now_ms: i64, out: &mut String) {
    out.push_str("# Persistence\r\n");
    let start = core.started_ms / 1000;
    for (k, v) in [
        ("loading", "0".to_string()),
        ("async_loading", "0".into()),
        ("current_cow_peak", "0".into()),
        ("current_cow_size", "0".into()),
        ("current_cow_size_age", "0".into()),
        ("current_fork_perc", "0.00".into()),
        ("current_save_keys_processed", "0".into()),
        ("current_save_keys_total", "0".into()),
        ("rdb_changes_since_last_save", "0".into()),
        ("rdb_bgsave_in_progress", "0".into()),
        ("rdb_last_save_time", start.to_string()),
        ("rdb_last_bgsave_status", "ok".into()),
        ("rdb_last_bgsave_time_sec", "-1".into()),
        ("rdb_current_bgsave_time_sec", "-1".into()),
        ("rdb_saves", "0".into()),
        ("rdb_last_cow_size", "0".into()),
        ("rdb_last_load_keys_expired", "0".into()),
        ("rdb_last_load_keys_loaded", "0".into()),
        ("aof_enabled", "0".into()),
        ("aof_rewrite_in_progress", "0".into()),
        ("aof_rewrite_scheduled", "0".into()),
        ("aof_last_rewrite_time_sec", "-1".into()),
        ("aof_current_rewrite_time_sec", "-1".into()),
        ("aof_last_bgrewrite_status", "ok".into()),
        ("aof_rewrites", "0".into()),
        ("aof_rewrites_consecutive_failures", "0".into()),
        ("aof_last_write_status", "ok".into()),
        ("aof_last_cow_size", "0".into()),
        ("module_fork_in_progress", "0".into()),
        ("module_fork_last_cow_size", "0".into()),
    ] {
        kv(out, k, v);
    }
}

/// INFO's `stats` section (Stats).
fn stats(core: &mut Core, _now_ms: i64, out: &mut String) {
    out.push_str("# Stats\r\n");
    let expired = core.stats.expired_keys + (0..DATABASES).map(|d| core.db_at(d).expired).sum::<u64>();
    let st = &core.stats;
    kv(out, "total_connections_received", st.total_connections);
    kv(out, "total_commands_processed", st.total_commands);
    for k in ["instantaneous_ops_per_sec", "total_net_input_bytes", "total_net_output_bytes"] {
        kv(out, k, 0);
    }
    for k in ["total_net_repl_input_bytes", "total_net_repl_output_bytes"] {
        kv(out, k, 0);
    }
    for k in [
        "instantaneous_input_kbps",
        "instantaneous_output_kbps",
        "instantaneous_input_repl_kbps",
        "instantaneous_output_repl_kbps",
    ] {
        kv(out, k, "0.00");
    }
    for k in ["rejected_connections", "sync_full", "sync_partial_ok", "sync_partial_err"] {
        kv(out, k, 0);
    }
    kv(out, "expired_keys", expired);
    kv(out, "expired_stale_perc", "0.00");
    kv(out, "expired_time_cap_reached_count", 0);
    kv(out, "expire_cycle_cpu_milliseconds", 0);
    kv(out, "evicted_keys", st.evicted_keys);
    for k in ["evicted_clients", "total_eviction_exceeded_time", "current_eviction_exceeded_time"] {
        kv(out, k, 0);
    }
    kv(out, "keyspace_hits", st.keyspace_hits);
    kv(out, "keyspace_misses", st.keyspace_misses);
    for k in [
        "pubsub_channels",
        "pubsub_patterns",
        "pubsubshard_channels",
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "slave_expires_tracked_keys",
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ] {
        kv(out, k, 0);
    }
    let (keys, items, prefixes) = core.tracking.totals();
    kv(out, "tracking_total_keys", keys);
    kv(out, "tracking_total_items", items);
    kv(out, "tracking_total_prefixes", prefixes);
    kv(out, "unexpected_error_replies", 0);
    kv(out, "total_error_replies", st.total_error_replies);
    for k in [
        "dump_payload_sanitizations",
        "total_reads_processed",
        "total_writes_processed",
        "io_threaded_reads_processed",
        "io_threaded_writes_processed",
        "reply_buffer_shrinks",
        "reply_buffer_expands",
    ] {
        kv(out, k, 0);
    }
}

/// INFO's `replication` section (Replication).
fn replication(core: &mut Core, _now_ms: i64, out: &mut String) {
    out.push_str("# Replication\r\n");
    if let Some((host, port)) = &core.master {
        kv(out, "role", "slave");
        kv(out, "master_host", host);
        kv(out, "master_port", port);
        for (k, v) in [
            ("master_link_status", "down"),
            ("master_last_io_seconds_ago", "-1"),
            ("master_sync_in_progress", "0"),
            ("slave_read_repl_offset", "0"),
            ("slave_repl_offset", "0"),
            ("master_link_down_since_seconds", "-1"),
            ("slave_priority", "100"),
            ("slave_read_only", if core.settings.flag("replica-read-only") { "1" } else { "0" }),
            ("replica_announced", "1"),
        ] {
            kv(out, k, v);
        }
    } else {
        kv(out, "role", "master");
    }
    let repl = &core.repl;
    kv(out, "connected_slaves", repl.replicas.len());
    for (i, r) in repl.replicas.iter().enumerate() {
        let line = format!("ip={},port={},state=online,offset={},lag=0", r.ip, r.port, repl.offset);
        kv(out, &format!("slave{i}"), line);
    }
    // The backlog exists from the first replica on (Redis's `createReplicationBacklog`).
    let backlog = repl.replid() != "0000000000000000000000000000000000000000";
    let offset = repl.offset.to_string();
    let histlen = repl.offset.min(1048576).to_string();
    let first = if backlog { (repl.offset - repl.offset.min(1048576) + 1).to_string() } else { "0".into() };
    for (k, v) in [
        ("master_failover_state", "no-failover"),
        ("master_replid", repl.replid()),
        ("master_replid2", "0000000000000000000000000000000000000000"),
        ("master_repl_offset", offset.as_str()),
        ("second_repl_offset", "-1"),
        ("repl_backlog_active", if backlog { "1" } else { "0" }),
        ("repl_backlog_size", "1048576"),
        ("repl_backlog_first_byte_offset", first.as_str()),
        ("repl_backlog_histlen", if backlog { histlen.as_str() } else { "0" }),
    ] {
        kv(out, k, v);
    }
}
