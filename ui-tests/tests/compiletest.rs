//! Every misuse of the derives is a compile error on the offending token
//! with a message that says what to write instead (`ui/fail`), and correct
//! uses compile in hostile settings (`ui/pass`). The errors in `ui/check`
//! are reported by `cargo check` alone, as rust-analyzer shows them: trybuild
//! checks instead of building only a set of cases without pass cases.

#[test]
fn ui() {
    {
        let cases = trybuild::TestCases::new();
        cases.compile_fail("tests/ui/check/*.rs");
    }
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
