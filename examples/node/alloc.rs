//! The node's memory allocator: jemalloc, shared with the cluster bench (`#[path]`) so that the
//! bench measures the node as it ships.
//!
//! An engine of 10,000 jobs allocates and frees in bursts (registration, every busy instant):
//! under glibc's allocator the fire path spent about 12 % of its CPU in `malloc` / `free` and
//! their free-list sorting, and the freed memory stayed resident. jemalloc's size classes and
//! thread caches cost less a fire (bench scenario 4's trigger delay p99 about a third lower), and
//! its background thread gives freed pages back a second after a burst (`dirty_decay_ms`), the
//! muzzy stage skipped. Two arenas rather than jemalloc's four a core: each arena keeps its own
//! partly used pages, and at 10,000 jobs one or two arenas held about a MiB less than the default
//! with the fire's delays unchanged (bench scenario 4, `_RJEM_MALLOC_CONF=narenas:N`; the node's
//! threads are few). Thread caches hold no size above 4 KiB (`tcache_max:4096`, down from 32 KiB):
//! a cache keeps what its thread freed for that thread's next allocations, and after a busy
//! instant an idle node's caches strand freed blocks that cannot then be given back (bench
//! scenario 4 at 10,000 jobs, in turn: about 0.6 MiB less resident). Fewer small objects cached
//! (`tcache_nslots_small_max:16`) saved a little more but cost the quiet fire's p99 about 0.3 ms
//! (scenario 1), and was not kept. The library does not choose: a service embedding shardcron
//! keeps its own global allocator (benches/README.md has the figures under both).

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read once at its start (jemalloc reads the symbol as a C string).
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] =
    b"background_thread:true,max_background_threads:1,narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0,\
      tcache_max:4096\0";
