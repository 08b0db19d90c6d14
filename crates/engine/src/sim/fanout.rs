//! One feed, several readers: the calling thread produces the chunks of a [`Feed`] once and every
//! reader thread receives each of them, in order, through its own bounded channel.
//!
//! The channels hold at most [`IN_FLIGHT`] chunks each, so memory stays constant however long the
//! feed is: the producer waits when the slowest reader falls that far behind. A reader that stops
//! early (an error) drops its channel; the others keep receiving, and the producer stops once no
//! reader is left.
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;

use super::feed::{Chunk, Feed};

/// Chunks buffered per reader: enough slack that readers of different speeds rarely wait on one
/// another, a few megabytes at most.
pub const IN_FLIGHT: usize = 16;

/// Runs `read(i, chunks)` for `i` in `0..readers`, each on its own thread, every one of them given
/// all of `feed`'s chunks in order, while this thread produces them. Results come in reader order.
/// The feed is left exhausted (or stopped early when every reader stopped), so its subject and
/// phase tables can be read afterwards.
pub fn fan_out<T: Send>(
    feed: &mut Feed,
    readers: usize,
    read: impl Fn(usize, &mut dyn Iterator<Item = Arc<Chunk>>) -> T + Sync,
) -> Vec<T> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..readers).map(|_| sync_channel::<Arc<Chunk>>(IN_FLIGHT)).unzip();
    std::thread::scope(|scope| {
        let read = &read;
        let handles: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(i, rx)| scope.spawn(move || read(i, &mut rx.into_iter())))
            .collect();
        let mut senders: Vec<Option<SyncSender<Arc<Chunk>>>> = senders.into_iter().map(Some).collect();
        for chunk in feed.by_ref() {
            let chunk = Arc::new(chunk);
            let mut listening = false;
            for slot in senders.iter_mut() {
                if let Some(tx) = slot {
                    if tx.send(Arc::clone(&chunk)).is_ok() {
                        listening = true;
                    } else {
                        *slot = None;
                    }
                }
            }
            if !listening {
                break;
            }
        }
        // Closing the channels ends every reader's iterator.
        drop(senders);
        handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::standard::builtin;

    #[test]
    fn every_reader_gets_every_chunk_in_order() {
        let s = builtin("simulations/uniform.toml").unwrap();
        let alone: Vec<(u32, i64)> = Feed::scenario(&s, 3)
            .unwrap()
            .flat_map(|c| c.iter().map(|(st, _)| (st.subject, st.at.0)).collect::<Vec<_>>())
            .collect();
        for readers in [1, 2, 5] {
            let mut feed = Feed::scenario(&s, 3).unwrap();
            let got = fan_out(&mut feed, readers, |_, chunks| {
                chunks
                    .flat_map(|c| c.iter().map(|(st, _)| (st.subject, st.at.0)).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            });
            assert_eq!(got.len(), readers);
            assert!(got.iter().all(|g| *g == alone), "{readers} readers");
            assert!(!feed.subjects().is_empty());
        }
    }

    #[test]
    fn readers_that_stop_early_do_not_stop_the_others() {
        // More chunks than the channels hold: the producer must notice the reader that left.
        let text = "name = \"z\"\nlimit = 3\nwindow_ms = 100\nalgorithms = \"all\"\n\
                    [traffic]\nkind = \"zipf_users\"\nusers = 1000\nrequests = 80000\nduration_ms = 60000\n";
        let s = crate::sim::Scenario::from_toml(text, std::path::Path::new("z.toml")).unwrap();
        let total = Feed::scenario(&s, 1).unwrap().len();
        assert!(total > (IN_FLIGHT + 2) * crate::sim::feed::CHUNK_LEN);
        let mut feed = Feed::scenario(&s, 1).unwrap();
        let counts = fan_out(&mut feed, 3, |i, chunks| {
            if i == 1 {
                return 0;
            }
            chunks.map(|c| c.len()).sum::<usize>()
        });
        assert_eq!(counts, [total, 0, total]);
        // Every reader stopping stops the producer.
        let mut feed = Feed::scenario(&s, 1).unwrap();
        assert_eq!(fan_out(&mut feed, 2, |_, _| ()), [(), ()]);
    }
}
