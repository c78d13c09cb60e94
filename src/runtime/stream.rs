//! CUDA streams a kernel can be launched on: the library's own (created by
//! [`Device::create_stream`](super::Device::create_stream), destroyed when the last handle
//! drops), another framework's (a borrowed raw `CUstream`, never destroyed here), and the
//! default streams.
//!
//! A [`Stream`] is only a handle: it does not keep a context current or order work between
//! streams. Ordering work on a borrowed stream with work its owner submits elsewhere is the
//! owner's business, as with any `cudaStream_t` passed between libraries.

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUstream;
use std::sync::Arc;

/// A stream to launch on.
#[derive(Clone, Debug)]
pub struct Stream {
    raw: CUstream,
    /// Keeps a library-owned stream alive; `None` for borrowed and default streams.
    owner: Option<Arc<CudaStream>>,
}

// SAFETY: a `CUstream` is a handle the driver lets any thread use; the library never
// dereferences it, and owned streams are kept alive by an `Arc<CudaStream>`, which is itself
// `Send + Sync`.
unsafe impl Send for Stream {}
// SAFETY: as above; `Stream` has no interior mutability.
unsafe impl Sync for Stream {}

impl Stream {
    /// The legacy default stream (`NULL`, `cudaStreamLegacy` semantics) of whatever context is
    /// current when the work is submitted. It synchronizes with every blocking stream.
    pub const fn default_stream() -> Stream {
        Stream {
            raw: std::ptr::null_mut(),
            owner: None,
        }
    }

    /// The calling thread's per-thread default stream (`CU_STREAM_PER_THREAD`).
    pub fn per_thread() -> Stream {
        Stream {
            raw: 0x2 as CUstream,
            owner: None,
        }
    }

    /// Borrows a stream created by another framework. Dropping the `Stream` does not destroy
    /// it.
    ///
    /// # Safety
    /// `raw` must be a valid stream of the context of the [`Device`](super::Device) it is used
    /// with (or `NULL`, `CU_STREAM_LEGACY` = 1, `CU_STREAM_PER_THREAD` = 2), and must stay
    /// alive while work launched on it through this handle may be submitted.
    pub unsafe fn from_raw(raw: CUstream) -> Stream {
        Stream { raw, owner: None }
    }

    /// Borrows a stream given as an integer handle, the way Python frameworks pass them
    /// (CuPy's `Stream.ptr`, PyTorch's `cuda_stream`, the `stream` entry of
    /// `__cuda_array_interface__`, where 1 and 2 mean the legacy and per-thread default
    /// streams, which is also what the driver makes of those values).
    ///
    /// # Safety
    /// As for [`Stream::from_raw`].
    pub unsafe fn from_handle(handle: usize) -> Stream {
        Stream {
            raw: handle as CUstream,
            owner: None,
        }
    }

    pub(crate) fn owned(stream: Arc<CudaStream>) -> Stream {
        Stream {
            raw: stream.cu_stream(),
            owner: Some(stream),
        }
    }

    /// The raw handle, for passing to other CUDA code. Do not destroy it.
    pub fn raw(&self) -> CUstream {
        self.raw
    }

    /// The handle as an integer (what Python frameworks take).
    pub fn handle(&self) -> usize {
        self.raw as usize
    }

    /// True for a stream the library created and will destroy.
    pub fn is_owned(&self) -> bool {
        self.owner.is_some()
    }

    /// The GPU of a library-owned stream (the device that created it); `None` for borrowed
    /// and default streams (see [`Stream::device`]).
    pub fn owner_device(&self) -> Option<usize> {
        self.owner.as_ref().map(|s| s.context().ordinal())
    }

    /// The GPU the stream belongs to: the device of its context, asked of the driver for a
    /// borrowed stream (`cuStreamGetCtx`). `None` for the default streams, which belong to
    /// whichever context is current when work is submitted, so they follow the launch.
    pub fn device(&self) -> Result<Option<usize>, super::RuntimeError> {
        if self.is_default() {
            return Ok(None);
        }
        if let Some(d) = self.owner_device() {
            return Ok(Some(d));
        }
        super::multi::stream_device(self.raw).map(Some)
    }

    /// True for the legacy or per-thread default stream.
    pub fn is_default(&self) -> bool {
        matches!(self.raw as usize, 0..=2)
    }
}

impl Default for Stream {
    fn default() -> Stream {
        Stream::default_stream()
    }
}
