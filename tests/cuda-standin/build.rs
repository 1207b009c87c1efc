//! The stand-in's soname is `libcuda.so`, the first name cudarc's loader
//! asks for (`dlopen("libcuda.so")`): once a test has loaded the stand-in by
//! its path, the loader hands cudarc that same library (a loaded object
//! matches a requested name by its soname) instead of searching the library
//! path, where no stand-in is. Frameworks ask for `libcuda.so.1` and never
//! match it.

fn main() {
    println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libcuda.so");
}
