//! Every GPU of a host: one shared [`Device`] per ordinal, where memory and streams live,
//! and copies between GPUs.
//!
//! - [`Device::open`] keeps a process-wide table of open devices by ordinal (weak
//!   references, so a device whose last handle drops releases its context): opening an
//!   ordinal twice, from any thread, gives handles to one state, with one context, one
//!   default stream and one module per loaded kernel.
//! - [`pointer_device`] asks the driver which GPU owns a device pointer
//!   (`cuPointerGetAttributes`: memory type, managed, `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`),
//!   for array descriptions that do not say (the CUDA Array Interface);
//!   [`Stream::device`](super::Stream::device) does the same for a stream.
//! - [`copy`] copies device memory from one GPU to another: peer to peer
//!   (`cuMemcpyPeerAsync`, after `cuCtxEnablePeerAccess`) where `cuDeviceCanAccessPeer` says
//!   the driver allows it, else through host memory ([`copy_through_host`]); the
//!   [`CopyPath`] it returns says which.
//!
//! Nothing here launches: a launch that mixes GPUs is refused by
//! [`Device::launch_packed`](super::Device::launch_packed) with
//! [`RuntimeError::WrongDevice`].

use super::error::{code, describe};
use super::{Device, DeviceState, RuntimeError, Stream, drv, lock};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The open devices by ordinal (see [`Device::open`]).
fn registry() -> &'static Mutex<HashMap<usize, Weak<DeviceState>>> {
    static OPEN: OnceLock<Mutex<HashMap<usize, Weak<DeviceState>>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

/// The state of GPU `ordinal`: the open one, or a new one from `make` (under the table's
/// lock, so two threads opening one GPU at once get one state).
pub(super) fn open_shared(
    ordinal: usize,
    make: impl FnOnce() -> Result<Arc<DeviceState>, RuntimeError>,
) -> Result<Arc<DeviceState>, RuntimeError> {
    let mut open = lock(registry());
    if let Some(s) = open.get(&ordinal).and_then(Weak::upgrade) {
        return Ok(s);
    }
    let s = make()?;
    open.insert(ordinal, Arc::downgrade(&s));
    Ok(s)
}

/// Whether the driver library loads, asked once per process (a failed `dlopen` searches
/// the library path every time, too slow for a per-launch query).
fn driver_loads() -> bool {
    static LOADS: OnceLock<bool> = OnceLock::new();
    *LOADS.get_or_init(|| super::driver_check().is_ok())
}

/// The number of GPUs the driver sees (0 without a driver).
pub fn device_count() -> usize {
    if !driver_loads() {
        return 0;
    }
    cudarc::driver::CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// The GPU that owns the device memory at `ptr`: `Some(ordinal)` for memory allocated on one
/// device (`cuMemAlloc`, memory pools, any framework's allocator), `None` for memory that is
/// not tied to one GPU (managed memory, pinned host memory) or that the driver does not know
/// (a host pointer, or no driver at all).
pub fn pointer_device(ptr: u64) -> Result<Option<usize>, RuntimeError> {
    use sys::CUpointer_attribute as A;
    if !driver_loads() {
        return Ok(None);
    }
    cudarc::driver::result::init().map_err(drv)?;
    // Each value is written through a pointer to its C type (unsigned int, bool, int), into
    // zeroed 8-byte cells: reading the low bytes back is exact on a little-endian host.
    let mut cells = [0u64; 3];
    let mut attrs = [
        A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        A::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    ];
    let mut data: [*mut c_void; 3] = [
        (&mut cells[0] as *mut u64).cast(),
        (&mut cells[1] as *mut u64).cast(),
        (&mut cells[2] as *mut u64).cast(),
    ];
    // SAFETY: three attributes, each with a writable cell large enough for its value. The
    // driver does not fail for pointers it does not know: it leaves the cells at zero.
    unsafe { sys::cuPointerGetAttributes(3, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) }
        .result()
        .map_err(|e| RuntimeError::Driver(describe(&e)))?;
    let memory_type = cells[0] as u32;
    let managed = cells[1] as u8 != 0;
    let ordinal = cells[2] as u32 as i32;
    let device_memory = memory_type == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
    Ok((device_memory && !managed && ordinal >= 0).then_some(ordinal as usize))
}

/// The GPU of a (non-default) stream's context.
pub(super) fn stream_device(raw: sys::CUstream) -> Result<usize, RuntimeError> {
    if !driver_loads() {
        return Err(RuntimeError::NoDriver(
            "the CUDA driver library does not load".into(),
        ));
    }
    cudarc::driver::result::init().map_err(drv)?;
    let bad = |e: cudarc::driver::DriverError| {
        RuntimeError::Driver(format!(
            "finding the GPU of stream {raw:p}: {}",
            describe(&e)
        ))
    };
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: the caller's stream is valid (the promise of `Stream::from_raw`); `ctx` is
    // written by the driver.
    unsafe { sys::cuStreamGetCtx(raw, &mut ctx) }
        .result()
        .map_err(bad)?;
    let mut dev: sys::CUdevice = 0;
    // SAFETY: `ctx` is the stream's live context; it is pushed for the one query and popped.
    unsafe {
        sys::cuCtxPushCurrent_v2(ctx).result().map_err(bad)?;
        let got = sys::cuCtxGetDevice(&mut dev).result();
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        let pop = sys::cuCtxPopCurrent_v2(&mut popped).result();
        got.and(pop).map_err(bad)?;
    }
    // A `CUdevice` is the device's ordinal.
    Ok(dev.max(0) as usize)
}

/// How [`copy`] moved the bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CopyPath {
    /// Both ends on one GPU: a device-to-device copy.
    SameDevice,
    /// Peer to peer (`cuMemcpyPeerAsync` with peer access enabled): NVLink or PCIe, not
    /// through the host.
    Peer,
    /// Through host memory: the driver does not allow peer access between the two GPUs
    /// (or [`copy_through_host`] was asked for).
    Host,
}

/// One end of a copy: `ptr` in the memory of `device`, ordered on `stream` (a stream of that
/// device, or a default stream, which is then that device's).
#[derive(Copy, Clone)]
pub struct Endpoint<'a> {
    /// The GPU the memory is on.
    pub device: &'a Device,
    /// The device address.
    pub ptr: u64,
    /// The stream whose work the copy is ordered with.
    pub stream: &'a Stream,
}

impl<'a> Endpoint<'a> {
    /// `ptr` on `device`, ordered on `stream`.
    pub fn new(device: &'a Device, ptr: u64, stream: &'a Stream) -> Endpoint<'a> {
        Endpoint {
            device,
            ptr,
            stream,
        }
    }
}

impl Device {
    /// Whether kernels and copies of this GPU may access `peer`'s memory directly
    /// (`cuDeviceCanAccessPeer`). A GPU is its own peer.
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool, RuntimeError> {
        if self.ordinal() == peer.ordinal() {
            return Ok(true);
        }
        let mut can = 0;
        // SAFETY: both devices are valid (opened); `can` is written by the driver.
        unsafe {
            sys::cuDeviceCanAccessPeer(&mut can, self.s.ctx.cu_device(), peer.s.ctx.cu_device())
        }
        .result()
        .map_err(|e| self.error(e))?;
        Ok(can != 0)
    }

    /// Lets this GPU's context access `peer`'s memory (`cuCtxEnablePeerAccess`), once:
    /// `Ok(true)` when access is (now or already) enabled, `Ok(false)` when the driver does
    /// not allow it between these GPUs. Kernels of this device may then read and write
    /// `peer`'s memory, and copies between them go peer to peer.
    pub fn enable_peer_access(&self, peer: &Device) -> Result<bool, RuntimeError> {
        if self.ordinal() == peer.ordinal() {
            return Ok(true);
        }
        let mut peers = lock(&self.s.peers);
        if peers.contains(&peer.ordinal()) {
            return Ok(true);
        }
        if !self.can_access_peer(peer)? {
            return Ok(false);
        }
        self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
        // SAFETY: this device's context is current; `peer`'s context lives (its handle).
        let r = unsafe { sys::cuCtxEnablePeerAccess(peer.s.ctx.cu_ctx(), 0) }.result();
        match r {
            Ok(()) => {}
            // Enabled already by other code sharing the primary context.
            Err(e) if code(&e) == 704 => {}
            // CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, CUDA_ERROR_TOO_MANY_PEERS.
            Err(e) if matches!(code(&e), 217 | 711) => return Ok(false),
            Err(e) => return Err(self.error(e)),
        }
        peers.push(peer.ordinal());
        Ok(true)
    }
}

/// Makes `waiter` (a stream of `wait_dev`) wait for the work submitted so far to `producer`
/// (a stream of `prod_dev`), without blocking the host: an event recorded in the producer's
/// context, waited on in the waiter's (allowed across GPUs).
fn order_after(
    wait_dev: &Device,
    waiter: &Stream,
    prod_dev: &Device,
    producer: &Stream,
) -> Result<(), RuntimeError> {
    use cudarc::driver::result::{event, stream};
    use sys::{CUevent_flags, CUevent_wait_flags};
    if wait_dev.same(prod_dev) && waiter.raw() == producer.raw() {
        return Ok(()); // one stream: already in order
    }
    prod_dev
        .s
        .ctx
        .bind_to_thread()
        .map_err(|e| prod_dev.error(e))?;
    let ev =
        event::create(CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(|e| prod_dev.error(e))?;
    // SAFETY: `ev` was created in the producer's context, which is current; `producer` is a
    // stream of it.
    let recorded = unsafe { event::record(ev, producer.raw()) };
    let waited = recorded.and_then(|()| {
        wait_dev.s.ctx.bind_to_thread()?;
        // SAFETY: waiting on an event of another context is allowed; `waiter` is a stream of
        // the waiter's context, now current.
        unsafe { stream::wait_event(waiter.raw(), ev, CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
    });
    // SAFETY: `ev` is not used again; the driver releases it once the wait is satisfied.
    let destroyed = unsafe { event::destroy(ev) };
    waited.and(destroyed).map_err(|e| wait_dev.error(e))
}

/// Copies `bytes` bytes from `src` to `dst`, which may be on different GPUs, and says how:
/// on one GPU a device-to-device copy, between GPUs whose driver allows peer access a peer
/// copy (enabling access both ways the first time), otherwise through host memory
/// ([`copy_through_host`]).
///
/// The copy is ordered with both streams: it starts after the work already submitted to
/// `src.stream` and `dst.stream`, and work submitted later to either starts after it. The
/// device and peer copies are asynchronous (nothing blocks the host); the host copy returns
/// once the bytes have arrived.
pub fn copy(dst: Endpoint<'_>, src: Endpoint<'_>, bytes: usize) -> Result<CopyPath, RuntimeError> {
    if bytes == 0 {
        return Ok(if dst.device.ordinal() == src.device.ordinal() {
            CopyPath::SameDevice
        } else {
            CopyPath::Peer
        });
    }
    let path = if dst.device.ordinal() == src.device.ordinal() {
        CopyPath::SameDevice
    } else if dst.device.enable_peer_access(src.device)?
        && src.device.enable_peer_access(dst.device)?
    {
        CopyPath::Peer
    } else {
        return copy_through_host(dst, src, bytes);
    };
    order_after(dst.device, dst.stream, src.device, src.stream)?;
    let (d, s) = (dst.device, src.device);
    d.s.ctx.bind_to_thread().map_err(|e| d.error(e))?;
    // SAFETY: the caller vouches for `bytes` bytes at both addresses on their devices; the
    // destination's context is current and `dst.stream` is its stream.
    unsafe {
        match path {
            CopyPath::SameDevice => {
                sys::cuMemcpyDtoDAsync_v2(dst.ptr, src.ptr, bytes, dst.stream.raw())
            }
            _ => sys::cuMemcpyPeerAsync(
                dst.ptr,
                d.s.ctx.cu_ctx(),
                src.ptr,
                s.s.ctx.cu_ctx(),
                bytes,
                dst.stream.raw(),
            ),
        }
    }
    .result()
    .map_err(|e| d.error(e))?;
    order_after(src.device, src.stream, dst.device, dst.stream)?;
    Ok(path)
}

/// Copies `bytes` bytes from `src` to `dst` through host memory, whatever the GPUs: waits
/// for `src.stream`, reads the bytes to the host, writes them on `dst.stream` and waits for
/// that. The fallback of [`copy`]; also usable on one GPU (to check it, say).
pub fn copy_through_host(
    dst: Endpoint<'_>,
    src: Endpoint<'_>,
    bytes: usize,
) -> Result<CopyPath, RuntimeError> {
    let mut host = vec![0u8; bytes];
    src.device.synchronize_stream(src.stream)?;
    // `synchronize_stream` made the source's context current.
    // SAFETY: `host` has `bytes` bytes; the caller vouches for the device memory.
    unsafe { sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), src.ptr, bytes) }
        .result()
        .map_err(|e| src.device.error(e))?;
    let d = dst.device;
    d.s.ctx.bind_to_thread().map_err(|e| d.error(e))?;
    // SAFETY: as above; `host` lives until the stream is synchronized below.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst.ptr, host.as_ptr().cast(), bytes, dst.stream.raw()) }
        .result()
        .map_err(|e| d.error(e))?;
    d.synchronize_stream(dst.stream)?;
    Ok(CopyPath::Host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_gpu_nothing_is_placed() {
        if super::super::driver_available() {
            return; // the GPU tests (tests/gpu_multi.rs) check the real answers
        }
        assert_eq!(device_count(), 0);
        assert_eq!(pointer_device(0x1000).unwrap(), None);
        assert!(matches!(Device::open(0), Err(RuntimeError::NoDriver(_))));
    }

    #[test]
    fn wrong_device_errors_name_both_gpus() {
        let e = RuntimeError::WrongDevice {
            kernel: "k".into(),
            what: "argument `a` is on".into(),
            found: 1,
            launch: 0,
        };
        let text = e.to_string();
        assert!(
            text.contains("launches on GPU 0, but argument `a` is on GPU 1"),
            "{text}"
        );
        assert!(e.context_usable());
        assert_eq!(e.kernel(), Some("k"));
    }
}
