"""Storages (backend/storage.py, ops/tensor_storage.py) against torch 2.13: sharing between
views, sizes, offsets, values written through storages, TypedStorage and the legacy classes,
set_ / is_set_to, errors, and the idioms libraries use (safetensors' shared-tensor detection,
DataLoader's shared collate buffer, torch.save of tied views)."""

import io
import pickle
import re
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.backend import storage as sf_storage


def _both(fn):
    return fn(sf), fn(torch)


def _views(m):
    x = m.arange(24, dtype=m.float32).reshape(4, 6)
    return x, [x, x[1:], x[:, 2:], x.t(), x.view(24)[5:], x.narrow(1, 3, 2), x[2, 3], x[1].expand(3, 6),
               x[:, 1:].unsqueeze(0).expand(2, 4, 5)]


def test_views_share_one_untyped_storage_with_torchs_sizes_and_offsets():
    (sx, sv), (tx, tv) = _views(sf), _views(torch)
    base = sx.untyped_storage()
    for s, t in zip(sv, tv, strict=True):
        st = s.untyped_storage()
        assert st is base  # one object per storage, as torch
        assert st.data_ptr() == sx.data_ptr()
        assert (st.nbytes(), st.size(), len(st), st.element_size()) == (
            t.untyped_storage().nbytes(), t.untyped_storage().size(), len(t.untyped_storage()), 1)
        assert s.storage_offset() == t.storage_offset()
        assert s.data_ptr() == st.data_ptr() + s.storage_offset() * s.element_size()
    assert base.device == sf.device("cpu") and not base.is_cuda
    assert base.tolist() == tx.untyped_storage().tolist()  # the same bytes
    assert sf.arange(3.0).untyped_storage() is not base


def test_storage_offset_of_a_tensor_over_a_foreign_buffer():
    # the old storage_offset walked .base to the bytearray's memoryview and raised AttributeError
    s = sf.from_numpy(np.frombuffer(bytearray(16), dtype=np.float32))
    t = torch.frombuffer(bytearray(16), dtype=torch.float32)
    assert s[1:].storage_offset() == t[1:].storage_offset() == 1
    assert s[1:].untyped_storage().nbytes() == 16


def test_writes_through_storages_appear_in_the_tensors():
    for m in (sf, torch):
        x = m.arange(6, dtype=m.float32)
        v = x[2:]
        us = v.untyped_storage()
        us[0:4] = 0  # float 0.0 is four zero bytes
        us[7] = 64  # 1.0 is 0x3F800000: high byte 0x40 makes x[1] 4.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts = v.storage()
        ts[5] = 7.5
        us[8:12].fill_(0)  # a slice shares the memory
        assert x.tolist() == [0.0, 4.0, 0.0, 3.0, 4.0, 7.5], m
        assert ts.tolist() == x.tolist()


def test_typed_storage_values_sizes_and_classes_match_torch():
    warnings.simplefilter("ignore")
    for dt in ("float32", "float64", "int64", "int8", "bool", "complex64", "bfloat16", "float16", "uint8"):
        s = sf.tensor([1, 0, 1], dtype=getattr(sf, dt)).storage()
        t = torch.tensor([1, 0, 1], dtype=getattr(torch, dt)).storage()
        assert (s.size(), len(s), s.nbytes(), s.element_size()) == (t.size(), len(t), t.nbytes(), t.element_size())
        assert s.tolist() == t.tolist() and s[0] == t[0] and type(s[0]) is type(t[0]) and s[-1] == t[-1]
        assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert s.type() == t.type()  # 'torch.FloatStorage' ...
        x = sf.zeros(1, dtype=getattr(sf, dt))
        assert x.storage_type().__name__ == torch.zeros(1, dtype=getattr(torch, dt)).storage_type().__name__
        assert isinstance(s, x.storage_type()) and sf.is_storage(s)
        assert s.untyped().nbytes() == s.nbytes()
    assert s.double().tolist() == t.double().tolist() and s.long().dtype == sf.int64
    assert sf.is_storage(sf.UntypedStorage(2)) and not sf.is_storage(sf.ones(2))


def test_storage_warns_torchs_deprecation_text():
    sf.storage._set_always_warn_typed_storage_removal(True)
    torch.storage._set_always_warn_typed_storage_removal(True)
    try:
        with pytest.warns(UserWarning) as s_rec:
            sf.ones(2).storage()
        with pytest.warns(UserWarning) as t_rec:
            torch.ones(2).storage()
    finally:
        sf.storage._set_always_warn_typed_storage_removal(False)
        torch.storage._set_always_warn_typed_storage_removal(False)
    assert str(s_rec[0].message) == str(t_rec[0].message)
    assert s_rec[0].filename == __file__  # points at the caller


def test_legacy_storage_classes_and_constructors():
    warnings.simplefilter("ignore")
    for name in sf_storage.LEGACY_STORAGES:
        s_cls, t_cls = getattr(sf, name), getattr(torch, name)
        assert str(s_cls.dtype).split(".")[-1] == str(t_cls.dtype).split(".")[-1]
        assert type(s_cls(2)) is sf.TypedStorage and s_cls(2).size() == t_cls(2).size() == 2
        assert s_cls([1, 0]).tolist() == t_cls([1, 0]).tolist()
    assert isinstance(sf.FloatStorage(1), sf.FloatStorage) and not isinstance(sf.FloatStorage(1), sf.DoubleStorage)
    assert sf.TypedStorage(3, dtype=sf.int64).tolist() == [0, 0, 0]
    assert sf.TypedStorage([1.0, 2.0], dtype=sf.float32).tolist() == [1.0, 2.0]
    us = sf.UntypedStorage(24)
    assert sf.TypedStorage(wrap_storage=us, dtype=sf.float64).size() == 3
    assert sf.TypedStorage(wrap_storage=us[0:5], dtype=sf.float64).size() == 0
    with pytest.raises(TypeError, match="wrap_storage"):
        sf.FloatStorage(us)
    with pytest.raises(TypeError):
        torch.FloatStorage(torch.UntypedStorage(4))


def test_untyped_storage_constructors_match_torch():
    for args in ([1, 2, 300], [255, -1]):
        assert sf.UntypedStorage(args).tolist() == torch.UntypedStorage(args).tolist()  # 300 -> 44
    assert sf.UntypedStorage(5).size() == 5 and sf.UntypedStorage(0).data_ptr() == torch.UntypedStorage(0).data_ptr() == 0
    buf = np.array([1, -2], np.int32).tobytes()
    for kw in ({"byte_order": "little", "dtype": "int32"}, {"dtype": "uint8"}):
        s = sf.UntypedStorage.from_buffer(buf, **{**kw, "dtype": getattr(sf, kw["dtype"])})
        t = torch.UntypedStorage.from_buffer(buf, **{**kw, "dtype": getattr(torch, kw["dtype"])})
        assert s.tolist() == t.tolist()
    big = np.array([1.5, -3.0], ">f8").tobytes()
    assert (sf.DoubleStorage.from_buffer(big, "big").tolist() == torch.DoubleStorage.from_buffer(big, "big").tolist()
            == [1.5, -3.0])


def test_fill_clone_copy_and_pickle():
    x = sf.arange(4, dtype=sf.int32)
    us = x.untyped_storage()
    c = us.clone()
    c.fill_(0)
    assert x.tolist() == [0, 1, 2, 3] and c.tolist() == [0] * 16 and c.data_ptr() != us.data_ptr()
    c.copy_(us)
    assert c.tolist() == us.tolist()
    ts = x._typed_storage()
    ts.fill_(9)
    assert x.tolist() == [9] * 4
    ts.copy_(sf.IntStorage([1, 2, 3, 4]))
    assert x.tolist() == [1, 2, 3, 4]
    back = pickle.loads(pickle.dumps(ts))
    assert back.tolist() == [1, 2, 3, 4] and back.dtype == sf.int32 and back.data_ptr() != ts.data_ptr()


def test_tensor_constructors_over_a_storage():
    warnings.simplefilter("ignore")
    for m in (sf, torch):
        x = m.arange(6, dtype=m.float32)
        ts = x.storage()
        shared = m.Tensor(ts)
        shared[0] = 9  # Tensor(storage) shares the memory
        also = m.tensor(ts)
        also[1] = 7  # torch.tensor(storage) shares it too (unlike tensor(list))
        on_bytes = m.Tensor(x.untyped_storage())  # default dtype over the bytes
        assert x.tolist() == [9, 7, 2, 3, 4, 5], m
        assert on_bytes.shape == (6,) and on_bytes.dtype == m.float32
        assert x.new(ts).data_ptr() == x.data_ptr()
        legacy = m.FloatTensor(ts)
        legacy[2] = 5
        assert x[2].item() == 5
    _same_error(lambda m: m.DoubleTensor(m.arange(3.0).storage()), RuntimeError, "Expected a Storage of type Double")


def test_set_to_a_storage_or_tensor_matches_torch():
    warnings.simplefilter("ignore")
    cases = [((), {}), ((1, (2, 2)), {}), ((1, (2,), (3,)), {}), ((0, (3, 2), (1, 3)), {})]
    for args, kw in cases:
        out = []
        for m in (sf, torch):
            x = m.arange(8, dtype=m.float32)
            y = m.empty(0).set_(x.storage(), *args, **kw)
            assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
            y.add_(100)  # writes reach x
            out.append((y.tolist(), tuple(y.shape), y.stride(), y.storage_offset(), x.tolist()))
        assert out[0] == out[1], args
    for m in (sf, torch):
        x = m.arange(6.0)
        y = m.empty(0).set_(x.untyped_storage())
        assert y.is_set_to(x) and not x.is_set_to(x[1:]) and not x.is_set_to(x.view(2, 3))
        z = m.zeros(3).set_(x)
        assert z.is_set_to(x) and z.data_ptr() == x.data_ptr()
        assert m.ones(3).set_().shape == (0,)
    _same_error(lambda m: m.empty(0, dtype=m.int64).set_(m.arange(3.0).storage()), RuntimeError,
                "Expected a Storage of type Long or an UntypedStorage, but got type Float")
    _same_error(lambda m: m.zeros(2, requires_grad=True).set_(m.ones(2)), RuntimeError, "leaf Variable")
    with pytest.raises(RuntimeError, match="cannot grow"):  # torch grows the storage instead
        sf.empty(0).set_(sf.arange(3.0).storage(), 0, (4,))


def _same_error(call, exc, prefix=None):
    with pytest.raises(exc) as t:
        call(torch)
    want = prefix or re.split(r"\b(?:Float|Long)\b|torch\.", str(t.value))[0][:30]
    with pytest.raises(exc, match=re.escape(want)):
        call(sf)


def test_storage_errors_match_torch():
    warnings.simplefilter("ignore")
    _same_error(lambda m: m.arange(6.0).untyped_storage()[24], IndexError)
    _same_error(lambda m: m.arange(6.0).storage()[6], IndexError)
    _same_error(lambda m: m.arange(6.0).storage()[1:3], RuntimeError)
    _same_error(lambda m: m.UntypedStorage(4).copy_(m.arange(6.0).untyped_storage()), RuntimeError)
    assert sf.arange(6.0).untyped_storage()[-1] == torch.arange(6.0).untyped_storage()[-1]
    s = sf.arange(6.0).untyped_storage()
    assert s.resize_(24) is s
    with pytest.raises(RuntimeError, match="not resizable"):
        s.resize_(100)
    with pytest.raises(RuntimeError, match="tensor.share_memory_"):
        s.share_memory_()


def test_shared_memory_storages():
    x = sf.arange(4.0).share_memory_()
    assert x[1:].untyped_storage().is_shared() and x.untyped_storage().share_memory_() is x.untyped_storage()
    assert not sf.arange(2.0).untyped_storage().is_shared()
    on_shared = sf.empty(0).set_(x.untyped_storage(), 1, (2,), (2,))  # a view of shared memory
    assert on_shared.is_shared() and sf.Tensor(x._typed_storage()).is_shared() and on_shared.tolist() == [1, 3]
    # torch's default_collate in a DataLoader worker: a shared buffer, viewed and resized
    elem = sf.ones(3)
    buf = elem._typed_storage()._new_shared(6, device=elem.device)
    out = elem.new(buf).resize_(2, 3)
    assert out.is_shared() and out.untyped_storage().data_ptr() == buf.data_ptr() and out.shape == (2, 3)
    assert sf.stack([elem, elem * 2], 0, out=out) is out  # torch's default_collate, word for word
    assert buf.tolist() == [1, 1, 1, 2, 2, 2]


def test_cat_and_stack_write_into_out_like_torch():
    for m in (sf, torch):
        o = m.empty(0)
        assert m.stack([m.ones(2), m.zeros(2)], 0, out=o) is o and o.tolist() == [[1, 1], [0, 0]]
        o = m.empty(0)
        assert m.cat([m.ones(2), m.zeros(1)], out=o) is o and o.tolist() == [1, 1, 0]
        with pytest.warns(UserWarning, match="was resized since it had shape"):
            m.cat([m.ones(1)], out=m.empty(3))
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            m.stack([m.ones(2, requires_grad=True)], out=m.empty(1, 2))
        with pytest.raises(TypeError, match="input types can't be cast to the desired output type Long"):
            m.cat([m.ones(2)], out=m.empty(2, dtype=m.int64))
        assert m.cat([m.ones(2, dtype=m.int64)], out=m.empty(2)).dtype == m.float32


def _storage_ptr(t):  # safetensors.torch.storage_ptr / storage_size / _end_ptr
    return t.untyped_storage().data_ptr()


def _shared_groups(tensors):
    groups = {}
    for name, t in tensors.items():
        groups.setdefault((_storage_ptr(t), t.untyped_storage().nbytes()), []).append(name)
    return sorted(sorted(g) for g in groups.values())


def test_safetensors_shared_tensor_detection_and_save_round_trip():
    def model(w):
        return {"embed": w, "lm_head": w, "rows": w[1:], "bias": w.new_zeros(3), "other": w.clone()}

    sw = sf.randn(4, 3)
    s, t = model(sw), model(torch.from_numpy(sw.numpy().copy()))
    assert _shared_groups(s) == _shared_groups(t) == [["bias"], ["embed", "lm_head", "rows"], ["other"]]
    assert s["rows"].storage_offset() == t["rows"].storage_offset() == 3
    buf = io.BytesIO()
    sf.save({"a": sw, "b": sw[1:]}, buf)
    buf.seek(0)
    back = sf.load(buf)
    assert np.array_equal(back["b"].numpy(), sw[1:].numpy()) and np.array_equal(back["a"].numpy(), sw.numpy())


def test_from_file_matches_torch(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(5, dtype=np.float32).tofile(path)
    s = sf.from_file(str(path), shared=False, size=4, dtype=sf.float32)
    t = torch.from_file(str(path), shared=False, size=4, dtype=torch.float32)
    assert s.tolist() == t.tolist() == [0, 1, 2, 3]
    s.fill_(1)  # private: the file is unchanged
    assert np.fromfile(path, np.float32).tolist() == [0, 1, 2, 3, 4]
    shared = sf.from_file(str(path), shared=True, size=2)
    shared.fill_(7)
    del shared
    assert np.fromfile(path, np.float32).tolist() == [7, 7, 2, 3, 4]
    u = sf.UntypedStorage.from_file(str(path), shared=False, nbytes=8)
    assert u.tolist() == torch.UntypedStorage.from_file(str(path), shared=False, nbytes=8).tolist()


def test_torch_save_files_load_with_their_views_sharing_a_storage(tmp_path):
    path = str(tmp_path / "views.pt")
    x = torch.arange(6.0)
    torch.save({"a": x, "v": x[2:].view(2, 2), "c": x.clone()}, path)
    s, t = sf.load(path), torch.load(path)
    assert s["v"].untyped_storage() is s["a"].untyped_storage()  # was a separate copy
    assert s["c"].untyped_storage() is not s["a"].untyped_storage()
    assert s["v"].storage_offset() == t["v"].storage_offset() == 2
    s["v"][0, 0] = 100
    t["v"][0, 0] = 100
    assert s["a"].tolist() == t["a"].tolist()


def test_meta_tensor_storages_have_sizes_and_no_memory():
    s, t = sf.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta")
    for m_s in (s.untyped_storage(), t.untyped_storage()):
        assert (m_s.data_ptr(), m_s.nbytes(), m_s.device.type) == (0, 24, "meta")
    with pytest.raises(NotImplementedError):
        s.untyped_storage().tolist()
