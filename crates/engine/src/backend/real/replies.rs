//! Reading a server's replies: which error replies mean the command never ran (and how to send it
//! again), an error reply's exact text, and a redis crate value as the emulator's [`Reply`].
use redis::{RedisError, Value};

use limitlab_emulator::Reply;

/// How a command refused before it ran is sent again (see [`not_run`]).
pub(super) enum Resend {
    /// Read the cluster's slot map again, then send it to the slot's owner.
    Remap,
    /// `ASKING` and the command on the node the reply names.
    Ask,
    /// The same command, after a pause.
    Later,
}

/// Whether an error reply means the command was refused before it ran, and how to send it again.
/// Redis answers these before executing anything: `MOVED`/`ASK` (another node serves the slot),
/// `BUSY` (a script or function is running past busy-reply-threshold), `LOADING` (the dataset is
/// being loaded), `TRYAGAIN` (a multi-key command during a slot migration), `CLUSTERDOWN`,
/// `MASTERDOWN`. `READONLY` in a cluster: the node became a replica in a failover, and a script
/// fails at its first write there, having written nothing. Every other error reply is the
/// command's outcome.
pub(super) fn not_run(e: &RedisError, cluster: bool) -> Option<Resend> {
    not_run_code(e.code()?, cluster)
}

/// [`not_run`] by the error's code.
pub(super) fn not_run_code(code: &str, cluster: bool) -> Option<Resend> {
    match code {
        "MOVED" if cluster => Some(Resend::Remap),
        "READONLY" if cluster => Some(Resend::Remap),
        "ASK" if cluster => Some(Resend::Ask),
        "BUSY" | "LOADING" | "TRYAGAIN" | "CLUSTERDOWN" | "MASTERDOWN" => Some(Resend::Later),
        _ => None,
    }
}

/// The exact text of an error reply: its code, a space and the rest, as the server sent it.
pub(super) fn error_text(e: &RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        (Some(c), None) => c.to_string(),
        _ => e.to_string(),
    }
}

/// A redis crate value as the emulator's [`Reply`], keeping RESP3 types where the server sent them.
pub fn to_reply(v: Value) -> Reply {
    match v {
        Value::Nil => Reply::Nil,
        Value::Int(i) => Reply::Int(i),
        Value::BulkString(b) => Reply::Bulk(b),
        Value::Array(a) => Reply::Array(a.into_iter().map(to_reply).collect()),
        Value::SimpleString(s) => Reply::Status(s),
        Value::Okay => Reply::ok(),
        Value::Map(kv) => Reply::Map(kv.into_iter().map(|(k, v)| (to_reply(k), to_reply(v))).collect()),
        Value::Attribute { data, .. } => to_reply(*data),
        Value::Set(s) => Reply::Set(s.into_iter().map(to_reply).collect()),
        Value::Double(d) => Reply::Double(d),
        Value::Boolean(b) => Reply::Bool(b),
        Value::VerbatimString { text, .. } => Reply::Bulk(text.into_bytes()),
        Value::Push { data, .. } => Reply::Array(data.into_iter().map(to_reply).collect()),
        Value::ServerError(e) => Reply::Error(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_string(),
        }),
        other => Reply::Bulk(format!("{other:?}").into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_replies() {
        let v = Value::Array(vec![
            Value::Okay,
            Value::Int(-2),
            Value::Nil,
            Value::BulkString(vec![0, 0xff]),
            Value::SimpleString("PONG".into()),
        ]);
        assert_eq!(
            to_reply(v),
            Reply::Array(vec![
                Reply::ok(),
                Reply::Int(-2),
                Reply::Nil,
                Reply::Bulk(vec![0, 0xff]),
                Reply::Status("PONG".into())
            ])
        );
    }
}
