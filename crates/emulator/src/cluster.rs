//! Redis Cluster's key distribution: CRC16 (XMODEM) hash slots, hash tags, and the CROSSSLOT rule.
use super::command_spec::CommandSpec;
use super::reply::Reply;

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The CROSSSLOT error text.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster uses.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The slot of a key: CRC16 of the part inside the first non-empty `{...}`, or of the whole key.
pub fn key_slot(key: &[u8]) -> u16 {
    if let Some(open) = key.iter().position(|&c| c == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&c| c == b'}') {
            if len > 0 {
                return crc16(&key[open + 1..open + 1 + len]) & (SLOTS - 1);
            }
        }
    }
    crc16(key) & (SLOTS - 1)
}

/// Keys that hash to more than one slot: a cluster node refuses the call (CROSSSLOT, or a
/// script's "non local key").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossSlot;

/// The one slot all `keys` share, `Ok(None)` for no keys, or [`CrossSlot`] when they span slots.
pub fn common_slot<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Result<Option<u16>, CrossSlot> {
    let mut slot = None;
    for k in keys {
        let s = key_slot(k);
        match slot {
            None => slot = Some(s),
            Some(x) if x != s => return Err(CrossSlot),
            _ => {}
        }
    }
    Ok(slot)
}

/// In cluster mode, a command whose keys span slots gets CROSSSLOT.
pub fn check_command_slots(spec: &CommandSpec, args: &[&[u8]]) -> Option<Reply> {
    match common_slot(spec.keys.keys(args)) {
        Err(CrossSlot) => Some(Reply::err(CROSSSLOT)),
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn slots_match_redis() {
        // Values from CLUSTER KEYSLOT on a real Redis.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 16383);
        assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") & 16383);
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
    }
}
