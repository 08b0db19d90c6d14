//! The global allocator of everything that links limitlab (the binary, the tests, the benches):
//! mimalloc, which the emulator's Lua states also allocate from directly ([`crate::lua`]).
/// mimalloc is the allocator of everything built from this crate (the binary, the tests, the
/// benches). Lua allocates many short-lived strings and tables per script call and mimalloc serves
/// them faster than the system allocator; the emulator's Lua states also allocate from mimalloc
/// directly ([`crate::lua`]), which is only sound because every block they may inherit from mlua's
/// own allocator (the global one) is a mimalloc block too.
#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// mimalloc as the global allocator, calling its plain `mi_malloc`/`mi_realloc` when the
/// alignment asked for is one they already give (the `mimalloc` crate's own `MiMalloc` always takes
/// the aligned entry points, which cost more on every allocation). mimalloc aligns every block to
/// the largest power of two dividing its size, up to 16 bytes (MI_MAX_ALIGN_SIZE), and a Rust
/// layout's size is a multiple of its alignment, so `align <= 16 && align <= size` is enough.
struct Mimalloc;

/// Whether a block of `size` bytes aligned to `align` can come from mimalloc's plain entry points
/// (see [`Mimalloc`]).
#[inline]
fn mi_plain(align: usize, size: usize) -> bool {
    align <= 16 && align <= size
}

// SAFETY: every block comes from mimalloc and goes back to it; alignment as argued above.
unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if mi_plain(layout.align(), layout.size()) {
            libmimalloc_sys::mi_malloc(layout.size()).cast()
        } else {
            libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if mi_plain(layout.align(), layout.size()) {
            libmimalloc_sys::mi_zalloc(layout.size()).cast()
        } else {
            libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        libmimalloc_sys::mi_free(ptr.cast());
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if mi_plain(layout.align(), new_size) {
            libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
        } else {
            libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
        }
    }
}
