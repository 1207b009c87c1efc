//! The driver's shared library, opened and its functions looked up: the
//! crate's one platform-specific code for CUDA. `libcuda.so.1` through
//! `dlopen` on Unix, `nvcuda.dll` through `LoadLibraryExW` on 64-bit Windows
//! (the driver API's `CUDAAPI`, `__stdcall`, is the C convention there);
//! elsewhere there is no driver to load.

use std::ffi::c_void;

/// The environment variable naming the driver library to load instead of
/// the platform's (a path, or a name the loader searches for).
pub(crate) const DRIVER_VARIABLE: &str = "PYO3_DLPACK_CUDA_DRIVER";

/// The library [`DRIVER_VARIABLE`] names, or else the platform's driver;
/// why it could not be opened otherwise.
pub(super) fn open_driver() -> Result<Library, String> {
    Library::open(std::env::var_os(DRIVER_VARIABLE).as_deref())
}

/// An opened library, never closed: the functions looked up in it stay
/// valid for the life of the process.
pub(super) struct Library {
    // Read by no platform without a driver (none opens there).
    #[cfg_attr(
        not(any(unix, all(windows, target_pointer_width = "64"))),
        allow(dead_code)
    )]
    handle: *mut c_void,
    /// The name it was opened by, for errors.
    name: String,
}

impl Library {
    /// The name the library was opened by.
    pub(super) fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(unix)]
mod platform {
    use std::ffi::{CStr, CString, OsStr, c_char, c_int, c_void};
    use std::os::unix::ffi::OsStrExt;

    use super::{DRIVER_VARIABLE, Library};

    unsafe extern "C" {
        fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        fn dlerror() -> *mut c_char;
    }
    const RTLD_NOW: c_int = 2;
    const RTLD_LOCAL: c_int = 0;

    /// The loader's message for its last failure.
    fn last_error() -> String {
        // SAFETY: `dlerror` returns NULL or a NUL-terminated message owned
        // by the loader, read at once.
        let message = unsafe { dlerror() };
        if message.is_null() {
            "unknown dlopen error".to_owned()
        } else {
            // SAFETY: non-NULL, NUL-terminated, as above.
            unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        }
    }

    impl Library {
        /// Opens `requested`, or `libcuda.so.1`.
        pub(super) fn open(requested: Option<&OsStr>) -> Result<Self, String> {
            let library = match requested {
                Some(path) => CString::new(path.as_bytes())
                    .map_err(|_| format!("{DRIVER_VARIABLE} holds a NUL byte"))?,
                None => c"libcuda.so.1".to_owned(),
            };
            // SAFETY: a NUL-terminated library name; the handle is never
            // closed (`Library`), so its symbols stay valid.
            let handle = unsafe { dlopen(library.as_ptr(), RTLD_NOW | RTLD_LOCAL) };
            if handle.is_null() {
                return Err(last_error());
            }
            let name = library.to_string_lossy().into_owned();
            Ok(Self { handle, name })
        }

        /// The address of the symbol `name`.
        pub(in super::super) fn symbol(&self, name: &CStr) -> Result<*mut c_void, String> {
            // SAFETY: a live handle and a NUL-terminated symbol name.
            let address = unsafe { dlsym(self.handle, name.as_ptr()) };
            if address.is_null() {
                return Err(format!(
                    "{} not found: {}",
                    name.to_string_lossy(),
                    last_error()
                ));
            }
            Ok(address)
        }
    }
}

#[cfg(all(windows, target_pointer_width = "64"))]
mod platform {
    use std::ffi::{CStr, OsStr, c_char, c_void};
    use std::os::windows::ffi::OsStrExt;

    use super::{DRIVER_VARIABLE, Library};

    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn LoadLibraryExW(name: *const u16, file: *mut c_void, flags: u32) -> *mut c_void;
        fn GetProcAddress(module: *mut c_void, name: *const c_char) -> *mut c_void;
    }
    /// Only System32, where the driver installs `nvcuda.dll` (no DLL of
    /// that name planted in the application's or the current directory).
    const LOAD_LIBRARY_SEARCH_SYSTEM32: u32 = 0x800;

    /// The system's message for the calling thread's last error.
    fn last_error() -> String {
        std::io::Error::last_os_error().to_string()
    }

    impl Library {
        /// Opens `requested` (the loader's usual search), or `nvcuda.dll`
        /// from System32.
        pub(super) fn open(requested: Option<&OsStr>) -> Result<Self, String> {
            let (library, flags) = match requested {
                Some(path) => (path, 0),
                None => (OsStr::new("nvcuda.dll"), LOAD_LIBRARY_SEARCH_SYSTEM32),
            };
            let mut wide: Vec<u16> = library.encode_wide().collect();
            if wide.contains(&0) {
                return Err(format!("{DRIVER_VARIABLE} holds a NUL character"));
            }
            wide.push(0);
            let name = library.to_string_lossy().into_owned();
            // SAFETY: a NUL-terminated UTF-16 library name and no file
            // handle (reserved: NULL); the module is never freed
            // (`Library`), so its functions stay valid.
            let handle = unsafe { LoadLibraryExW(wide.as_ptr(), std::ptr::null_mut(), flags) };
            if handle.is_null() {
                return Err(format!("{name}: {}", last_error()));
            }
            Ok(Self { handle, name })
        }

        /// The address of the function `name`.
        pub(in super::super) fn symbol(&self, name: &CStr) -> Result<*mut c_void, String> {
            // SAFETY: a live module handle and a NUL-terminated name.
            let address = unsafe { GetProcAddress(self.handle, name.as_ptr()) };
            if address.is_null() {
                return Err(format!(
                    "{} not found: {}",
                    name.to_string_lossy(),
                    last_error()
                ));
            }
            Ok(address)
        }
    }
}

#[cfg(not(any(unix, all(windows, target_pointer_width = "64"))))]
mod platform {
    use std::ffi::{CStr, OsStr, c_void};

    use super::Library;

    impl Library {
        /// No driver here: CUDA's driver API is Unix's `libcuda.so.1` and
        /// 64-bit Windows' `nvcuda.dll`.
        pub(super) fn open(_requested: Option<&OsStr>) -> Result<Self, String> {
            Err(
                "loading the CUDA driver is implemented for Unix (libcuda.so.1) and \
                 64-bit Windows (nvcuda.dll) only"
                    .to_owned(),
            )
        }

        /// Never called: no library opens here.
        pub(in super::super) fn symbol(&self, name: &CStr) -> Result<*mut c_void, String> {
            Err(format!("{} not found", name.to_string_lossy()))
        }
    }
}
