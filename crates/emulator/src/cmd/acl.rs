//! ACL: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, GENPASS, LOG, DRYRUN, LOAD, SAVE and
//! HELP, with Redis 7.0.15's replies (the model is in [`crate::acl`]). ACL acts for the calling
//! client (WHOAMI, the log's client line), so it runs through [`crate::Emulator::execute_as`].
use crate::acl::{self, Acl, Denied};
use crate::clients::ClientId;
use crate::clock::Clock as _;
use crate::command_spec::flags::*;
use crate::command_spec::{eq_ic, CommandSpec, KeySpec};
use crate::core::Core;
use crate::deliver::Deliver;
use crate::reply::Reply;

pub static COMMANDS: &[CommandSpec] =
    &[CommandSpec { name: "acl", arity: -2, flags: CONNECTION, keys: KeySpec::NONE, handler: acl_without_connection }];

static HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

/// ACL from a script or without a client: as client 0.
fn acl_without_connection(core: &mut Core, a: &[&[u8]]) -> Reply {
    let caller = core.caller;
    run(core, caller, a)
}

/// Whether new users (and `reset`) get every channel (`acl-pubsub-default allchannels`).
pub fn all_channels_default(core: &Core) -> bool {
    core.settings.get("acl-pubsub-default").eq_ignore_ascii_case(b"allchannels")
}

/// ACL sent by client `id` (the subcommand and its arity were checked by the caller).
pub fn run(core: &mut Core, id: ClientId, a: &[&[u8]]) -> Reply {
    let sub = a[1];
    if eq_ic(sub, "help") {
        return Reply::Array(HELP.iter().map(|l| Reply::Status((*l).into())).collect());
    }
    if eq_ic(sub, "whoami") {
        let name = core.client(id).and_then(|c| c.user.clone()).unwrap_or_else(|| b"default".to_vec());
        return Reply::Bulk(name);
    }
    if eq_ic(sub, "users") {
        return Reply::Array(core.acl.users.keys().map(|k| Reply::Bulk(k.clone())).collect());
    }
    if eq_ic(sub, "list") {
        return core.acl.list();
    }
    if eq_ic(sub, "getuser") {
        return core.acl.users.get(a[2]).map_or(Reply::Nil, acl::User::getuser);
    }
    if eq_ic(sub, "setuser") {
        return setuser(core, a);
    }
    if eq_ic(sub, "deluser") {
        return deluser(core, &a[2..]);
    }
    if eq_ic(sub, "cat") {
        return cat(a);
    }
    if eq_ic(sub, "genpass") {
        let bits = match a.get(2) {
            None => 256,
            Some(b) => match crate::command_spec::arg_i64(b) {
                Ok(n) if (1..=4096).contains(&n) => n as usize,
                Ok(_) => {
                    return Reply::err(
                        "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
                    )
                }
                Err(e) => return e,
            },
        };
        return Reply::Bulk(acl::genpass(bits));
    }
    if eq_ic(sub, "log") {
        return log(core, a);
    }
    if eq_ic(sub, "dryrun") {
        return dryrun(core, a);
    }
    if eq_ic(sub, "load") || eq_ic(sub, "save") {
        return Reply::err(NO_ACL_FILE);
    }
    Reply::Error(format!("ERR unknown subcommand '{}'. Try ACL HELP.", String::from_utf8_lossy(sub)))
}

fn setuser(core: &mut Core, a: &[&[u8]]) -> Reply {
    let name = a[2];
    let user = match core.acl.setuser(name, &a[3..], all_channels_default(core)) {
        Ok(u) => u,
        Err(r) => return r,
    };
    // Subscribers of channels the user may no longer use are disconnected.
    let mut kill = Vec::new();
    for (i, c) in core.clients.iter().enumerate() {
        let Some(c) = c else { continue };
        if c.user.as_deref().unwrap_or(b"default") != name {
            continue;
        }
        let cid = ClientId(i as u32);
        if let Some((ch, pat, shard)) = core.pubsub.subscriptions(cid) {
            if !user.keeps_subscriptions(ch, pat, shard) {
                kill.push(cid);
            }
        }
    }
    core.acl.users.insert(name.to_vec(), user);
    for cid in kill {
        core.outbox.push((cid, Deliver::Close));
    }
    Reply::ok()
}

fn deluser(core: &mut Core, names: &[&[u8]]) -> Reply {
    if names.iter().any(|n| *n == b"default") {
        return Reply::err("ERR The 'default' user cannot be removed");
    }
    let mut deleted = 0;
    for n in names {
        if core.acl.users.remove(*n).is_some() {
            deleted += 1;
            for (i, c) in core.clients.iter().enumerate() {
                if c.as_ref().is_some_and(|c| c.user.as_deref() == Some(*n)) {
                    core.outbox.push((ClientId(i as u32), Deliver::Close));
                }
            }
        }
    }
    Reply::Int(deleted)
}

fn cat(a: &[&[u8]]) -> Reply {
    if a.len() > 3 {
        return Reply::err("ERR unknown subcommand or wrong number of arguments for 'cat'. Try ACL HELP.");
    }
    let Some(name) = a.get(2) else {
        return Reply::Array(acl::CATEGORIES.iter().map(|c| Reply::Bulk(c.as_bytes().to_vec())).collect());
    };
    let Some(bit) = acl::category_bit(name) else {
        return Reply::Error(format!("ERR Unknown category '{}'", String::from_utf8_lossy(name)));
    };
    let u = acl::universe();
    let mut out = Vec::new();
    for &top in &u.tops {
        if u.cmds[top].cats & bit != 0 {
            out.push(Reply::Bulk(u.cmds[top].full.as_bytes().to_vec()));
        }
        for &s in &u.cmds[top].subs {
            if u.cmds[s].cats & bit != 0 {
                out.push(Reply::Bulk(u.cmds[s].full.as_bytes().to_vec()));
            }
        }
    }
    Reply::Array(out)
}

fn log(core: &mut Core, a: &[&[u8]]) -> Reply {
    if a.len() > 3 {
        return Reply::err("ERR unknown subcommand or wrong number of arguments for 'log'. Try ACL HELP.");
    }
    let mut count = 10usize;
    if let Some(arg) = a.get(2) {
        if eq_ic(arg, "reset") {
            core.acl.log.clear();
            return Reply::ok();
        }
        match crate::command_spec::arg_i64(arg) {
            Ok(n) => count = n.max(0) as usize,
            Err(e) => return e,
        }
    }
    let now = core.clock.now_millis().0;
    let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    Reply::Array(
        core.acl
            .log
            .iter()
            .take(count)
            .map(|e| {
                Reply::Map(vec![
                    (b("count"), Reply::Int(e.count as i64)),
                    (b("reason"), b(e.reason)),
                    (b("context"), b(e.context)),
                    (b("object"), Reply::Bulk(e.object.clone())),
                    (b("username"), Reply::Bulk(e.username.clone())),
                    (b("age-seconds"), Reply::Double((now - e.ctime_ms) as f64 / 1000.0)),
                    (b("client-info"), b(&e.client_info)),
                ])
            })
            .collect(),
    )
}

fn dryrun(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(user) = core.acl.users.get(a[2]) else {
        return Reply::Error(format!("ERR User '{}' not found", String::from_utf8_lossy(a[2])));
    };
    let call = &a[3..];
    let u = acl::universe();
    let Some(id) = u.of_call(call) else {
        return Reply::Error(format!("ERR Command '{}' not found", String::from_utf8_lossy(call[0])));
    };
    let known = crate::cmd::command::redis_lookup(call).ok();
    let arity_ok = match known {
        Some(c) => c.arity_ok(call.len()),
        None => true,
    };
    if !arity_ok {
        return crate::command_spec::arity_error(&u.cmds[id].full);
    }
    match user.check(call) {
        Ok(()) => Reply::ok(),
        Err((d, pos)) => Reply::Bulk(verbose_denial(d, &u.cmds[id].full, call.get(pos).copied()).into_bytes()),
    }
}

/// ACL DRYRUN's account of a denial (Redis's verbose `getAclErrorMessage`).
fn verbose_denial(d: Denied, command: &str, arg: Option<&[u8]>) -> String {
    let arg = String::from_utf8_lossy(arg.unwrap_or(b"")).into_owned();
    match d {
        Denied::Command => format!("This user has no permissions to run the '{command}' command"),
        Denied::Key => format!("This user has no permissions to access the '{arg}' key"),
        Denied::Channel => format!("This user has no permissions to access the '{arg}' channel"),
        Denied::Auth => "lack of permissions".to_string(),
    }
}

/// A client's refusal by the ACL as a command sent at top level (or queued in MULTI) gets it.
pub fn toplevel_error(d: Denied, command: &str) -> Reply {
    match d {
        Denied::Command => Reply::Error(format!("NOPERM this user has no permissions to run the '{command}' command")),
        Denied::Key => Reply::err("NOPERM this user has no permissions to access one of the keys used as arguments"),
        Denied::Channel => {
            Reply::err("NOPERM this user has no permissions to access one of the channels used as arguments")
        }
        Denied::Auth => Reply::err("NOPERM lack of permissions"),
    }
}

/// A script's `redis.call` refused by the ACL (Redis 7.0's scriptCall texts).
pub fn script_error(d: Denied) -> Reply {
    match d {
        Denied::Command => Reply::err("ERR The user executing the script can't run this command or subcommand"),
        Denied::Key => Reply::err(
            "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
        ),
        Denied::Channel => Reply::err(
            "ERR The user executing the script can't publish to the channel mentioned in the command",
        ),
        Denied::Auth => Reply::err("ERR lack of permissions"),
    }
}

/// EXEC finding a queued command no longer allowed.
pub fn exec_error(d: Denied) -> Reply {
    let reason = match d {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key => "no permission to touch the specified keys",
        Denied::Channel => "no permission to access one of the channels used as arguments",
        Denied::Auth => "no permission",
    };
    Reply::Error(format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
    ))
}

impl Core {
    /// The ACL check of a call by client `id` (Redis's `ACLCheckAllPerm`); a denial is logged with
    /// `context` (`toplevel`, `multi`, `lua`) and returned with the command's full name.
    pub fn acl_check(&mut self, id: ClientId, args: &[&[u8]], context: &'static str) -> Result<(), (Denied, String)> {
        if self.acl_unrestricted(id) {
            return Ok(());
        }
        let c = self.clients[id.index()].as_ref().expect("a client (acl_unrestricted)");
        let user = self.acl.user(c.user.as_deref()).expect("a user (acl_unrestricted)");
        let Err((d, pos)) = user.check(args) else { return Ok(()) };
        let u = acl::universe();
        let full = u.of_call(args).map_or_else(String::new, |i| u.cmds[i].full.clone());
        let object = match d {
            Denied::Command => full.as_bytes().to_vec(),
            _ => args.get(pos).map_or(Vec::new(), |a| a.to_vec()),
        };
        let username = user.name.clone();
        self.acl_log(id, d.reason(), context, &object, &username);
        Err((d, full))
    }

    /// Whether [`Core::acl_check`] lets client `id` run anything: it has no user, or one with every
    /// command, key and channel.
    pub fn acl_unrestricted(&self, id: ClientId) -> bool {
        let Some(c) = self.clients.get(id.index()).and_then(Option::as_ref) else { return true };
        self.acl.user(c.user.as_deref()).is_none_or(|u| u.unrestricted())
    }

    /// Adds an entry to the ACL log for client `id`.
    pub fn acl_log(&mut self, id: ClientId, reason: &'static str, context: &'static str, object: &[u8], user: &[u8]) {
        let now = self.clock.now_millis().0;
        let mut line = super::client::line_of(self, id);
        if line.ends_with('\n') {
            line.pop();
        }
        let max = self.settings.int("acllog-max-len").max(0) as usize;
        self.acl.log(reason, context, object, user, now, line, max);
    }

    /// AUTH / HELLO AUTH (`command`) for client `id`: true (and the client is that user's) when the password
    /// is right and the user is on; a failure is logged.
    pub fn authenticate(&mut self, id: ClientId, user: &[u8], pass: &[u8], command: &'static str) -> bool {
        if let Some(c) = self.client(id) {
            c.last_cmd = Some((command, None));
        }
        let ok = self.acl.users.get(user).is_some_and(|u| u.password_ok(pass));
        if ok {
            if let Some(c) = self.client(id) {
                c.user = if user == b"default" { None } else { Some(user.to_vec()) };
                c.authenticated = true;
            }
        } else {
            self.acl_log(id, "auth", "toplevel", b"auth", user);
        }
        ok
    }

    /// Whether client `id` must authenticate before anything else (Redis's `authRequired`): the
    /// default user has a password (or is off) and the client has not authenticated.
    pub fn auth_required(&self, id: ClientId) -> bool {
        let d = self.acl.default_user();
        let open = d.nopass && d.enabled;
        !open && !self.clients.get(id.index()).and_then(Option::as_ref).is_some_and(|c| c.authenticated)
    }
}

/// The ACL of a fresh server.
pub fn fresh() -> Acl {
    Acl::default()
}
