"""Top-level ``torch.Stream`` / ``torch.Event`` with ``device='cuda'``: they wrap
``shardflow.cuda``'s stream and event (CuPy's stand-in here) instead of refusing as on the CPU."""

import shardflow as sf


def test_cuda_stream_and_event_wrap_shardflow_cuda():
    s = sf.Stream(device="cuda")
    assert isinstance(s._cuda, sf.cuda.Stream)
    assert (s.device.type, s.device_type, s.device_index) == ("cuda", 1, 0)
    assert s.synchronize() is None and not s.is_capturing()
    assert s.native_handle == s.stream_id
    e = s.record_event()  # the CPU backend refuses this; CUDA records
    assert isinstance(e, sf.Event) and e._cuda._recorded and e.query()
    e.synchronize()
    timed = sf.Event(device="cuda", enable_timing=True)
    timed.record(s)
    assert timed._cuda._recorded and timed.device.type == "cuda"
    assert sf.Stream().device.type == "cuda"  # the default device is the accelerator
    with s as entered:
        assert entered is s
