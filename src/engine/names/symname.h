/*
 * symname: a function's symbol as people read it -- C++ and Rust names
 * demangled, a C++20 coroutine's clones named after the coroutine, long
 * names shortened -- and the function part found again in the text corotop
 * prints.  See symname.c (symname_entry: symentry.c).
 */
#ifndef COROTOP_SYMNAME_H
#define COROTOP_SYMNAME_H

#include <stdbool.h>
#include <stddef.h>

/* The longest name symname_format makes, in bytes without the NUL: it
 * fits struct symtab_sym's function[128] and leaves room in a namecache
 * line (NAMECACHE_NAME_MAX) for "+0x..." and " (file:line)". */
#define SYMNAME_MAX 120

/* Mangled names longer than this are not demangled (they show as they
 * are, shortened): it bounds the demangler's stack, which grows with the
 * name.  libiberty's C++ demangler refuses longer ones itself (its arrays
 * of 2 * length components past DEMANGLE_RECURSION_LIMIT); the same bound
 * holds for Rust's. */
#define SYMNAME_MANGLED_MAX 1024

/*
 * The first `len` bytes of `raw` -- a symbol as an ELF file spells it,
 * untrusted: "_Z4taskv.actor", "_RNvCs1234_5hello4main",
 * "clock_gettime@@GLIBC_2.17" -- as people read it, into buf ("task()",
 * "hello::main", "clock_gettime"), at most SYMNAME_MAX and n - 1 bytes,
 * terminated when n > 0.  Returns the length written; 0 for an empty name.
 * Reentrant, no allocation; it may take a few microseconds, so callers
 * keep the result.
 */
size_t symname_format(const char *raw, size_t len, char *buf, size_t n);

/*
 * In `where`, a name as corotop writes it -- "func+0x1a" or
 * "func+0x1a (file.c:42)", where func may itself hold spaces, '+' and
 * parentheses ("operator+(int, char const*)") -- the length of func: up to
 * the last "+0x<hex>" that ends the text or comes before " (".  Without
 * one, up to a " (FILE:LINE)" that ends the text; else the whole length.
 */
size_t symname_function_len(const char *where);

/*
 * Whether `function` (a function's name as symname_format makes it, its
 * "+0x..." and file cut off) is a runtime's entry template -- the
 * function a context is made to run, instantiated for the program's own:
 * Boost.Context's fiber_entry, fiber_entry_func, context_entry and
 * entry_func, Boost.Coroutine's trampolines.  Then out gets the program's
 * function it was made for, found in its template arguments
 * (Boost.Fiber's worker_context<F>: F; else the first of the program's
 * names, the last argument of each list first: a record's Fn, a
 * Coroutine2 control_block's Fn), or "" when they name none of the
 * program's (a function pointer's type, the runtime's own types).  False,
 * out "", for any other function.  Untrusted text: bounded, brackets
 * matched; at most n - 1 bytes written, terminated when n > 0.
 */
bool symname_entry(const char *function, char *out, size_t n);

#endif
