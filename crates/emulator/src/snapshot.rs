//! The snapshot a master sends a replica that attaches (`SYNC`): an RDB file of version 10, as
//! Redis 7.0's `rdbSaveRio` writes it: the magic, the aux fields (with the replication id and
//! offset), the function libraries, each non-empty database (`SELECTDB`, `RESIZEDB`, its keys with
//! their deadlines), the `EOF` opcode and the CRC-64 of all of it. Values use the encodings of
//! [`crate::rdb`] (DUMP's), streams with their consumer groups included.
use crate::clock::Clock;
use crate::core::{Core, DATABASES};
use crate::lua::functions::rdb::{crc64, rdb_save_len};
use crate::rdb::{save_key_value, save_raw_string, RDB_VERSION};

const OPCODE_AUX: u8 = 0xFA;
const OPCODE_RESIZEDB: u8 = 0xFB;
const OPCODE_EXPIRETIME_MS: u8 = 0xFC;
const OPCODE_SELECTDB: u8 = 0xFE;
const OPCODE_EOF: u8 = 0xFF;

fn aux(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    out.push(OPCODE_AUX);
    save_raw_string(out, key.as_bytes(), false);
    save_raw_string(out, value, false);
}

/// The RDB file of the whole dataset, with `functions` (the libraries' records) after the aux
/// fields.
pub(crate) fn rdb(core: &mut Core, functions: &[u8]) -> Vec<u8> {
    let compress = core.settings.flag("rdbcompression");
    let mut out = format!("REDIS{RDB_VERSION:04}").into_bytes();
    let ctime = (core.clock.now_millis().0 / 1000).to_string();
    let used = core.used_memory().to_string();
    let offset = core.repl.offset.to_string();
    let replid = core.repl.replid().to_string();
    aux(&mut out, "redis-ver", b"7.0.15");
    aux(&mut out, "redis-bits", b"64");
    aux(&mut out, "ctime", ctime.as_bytes());
    aux(&mut out, "used-mem", used.as_bytes());
    aux(&mut out, "repl-stream-db", b"0");
    aux(&mut out, "repl-id", replid.as_bytes());
    aux(&mut out, "repl-offset", offset.as_bytes());
    aux(&mut out, "aof-base", b"0");
    out.extend_from_slice(functions);
    let now = core.now_ms();
    for i in 0..DATABASES {
        let db = core.db_at(i);
        let live: Vec<_> =
            db.map.iter().filter(|(_, e)| !(db.expiry_enabled && e.expire_at.is_some_and(|t| t < now))).collect();
        if live.is_empty() {
            continue;
        }
        out.push(OPCODE_SELECTDB);
        rdb_save_len(&mut out, i as u64);
        out.push(OPCODE_RESIZEDB);
        rdb_save_len(&mut out, live.len() as u64);
        rdb_save_len(&mut out, live.iter().filter(|(_, e)| e.expire_at.is_some()).count() as u64);
        for (k, e) in live {
            if let Some(t) = e.expire_at {
                out.push(OPCODE_EXPIRETIME_MS);
                out.extend_from_slice(&t.to_le_bytes());
            }
            let _ = save_key_value(&mut out, k.as_slice(), &e.value, compress);
        }
    }
    out.push(OPCODE_EOF);
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}
