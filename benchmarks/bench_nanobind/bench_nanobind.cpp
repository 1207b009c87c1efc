// nanobind's nb::ndarray, the C++ reference for per-call DLPack cost, with the
// functions the head-to-head rows time (see ../README.md). Built by build.py
// with g++ -O3, no cmake.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <cstring>

namespace nb = nanobind;

using AnyArray = nb::ndarray<>;
using F32Host = nb::ndarray<float, nb::c_contig, nb::device::cpu>;

// A fresh zeroed float32 buffer of n elements, owned by a capsule that frees it.
static std::pair<float *, nb::capsule> fresh_buffer(size_t n) {
    float *data = new float[n];
    std::memset(data, 0, n * sizeof(float));
    nb::capsule owner(data, [](void *p) noexcept { delete[] static_cast<float *>(p); });
    return {data, owner};
}

NB_MODULE(bench_nanobind, m) {
    // The call floor: one object argument, no conversion.
    m.def("noop", [](nb::handle) { return 0; });
    // Untyped import (any dtype, device, layout): ndim, as the other crates' import_tensor.
    m.def("import_tensor", [](AnyArray a) { return a.ndim(); }, nb::arg("a").noconvert());
    // A list of arrays, each imported as an untyped nb::ndarray<> (the list
    // rows): how many.
    m.def("import_list", [](std::vector<AnyArray> v) { return v.size(); },
          nb::arg("v").noconvert());
    // Typed import: float32, C-contiguous, CPU (what a derived FromDLPack with
    // dtype, contiguity and device checks does).
    m.def("import_typed", [](F32Host a) { return a.ndim(); }, nb::arg("a").noconvert());
    // Typed import with the rank in the type: float32, 2-D, C-contiguous (what a
    // `Tensor2<f32>` argument and its row-major slice check): its element count.
    m.def("import_typed2",
          [](nb::ndarray<float, nb::ndim<2>, nb::c_contig> a) { return a.size(); },
          nb::arg("a").noconvert());
    // A fresh 1-D float32 buffer returned as a numpy.ndarray / torch.Tensor / jax.Array.
    m.def("fresh_numpy", [](size_t n) {
        auto [data, owner] = fresh_buffer(n);
        return nb::ndarray<nb::numpy, float, nb::ndim<1>>(data, {n}, owner);
    });
    m.def("fresh_torch", [](size_t n) {
        auto [data, owner] = fresh_buffer(n);
        return nb::ndarray<nb::pytorch, float, nb::ndim<1>>(data, {n}, owner);
    });
    m.def("fresh_jax", [](size_t n) {
        auto [data, owner] = fresh_buffer(n);
        return nb::ndarray<nb::jax, float, nb::ndim<1>>(data, {n}, owner);
    });
    // nanobind's own exporter object (nb_ndarray: __dlpack__, __dlpack_device__,
    // the buffer protocol) over a fresh buffer.
    m.def("export_object", [](size_t n) {
        auto [data, owner] = fresh_buffer(n);
        return nb::ndarray<nb::array_api, float, nb::ndim<1>>(data, {n}, owner);
    });
}
