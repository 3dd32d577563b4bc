/*
 * symname: the name a function's symbol shows as, made once where names
 * come from (the symbolizer), so that every output -- the WHERE column,
 * the detail view, hot stacks, folded stacks, speedscope, Chrome trace,
 * JSONL, Heph recordings -- gets the same readable text.
 *
 * Demangling.  libiberty's demangler (Debian's libiberty-dev, linked
 * statically; docs/NAMES.md says why this one and what its licence asks):
 * rust_demangle_callback reads Rust's legacy ("_ZN...17h<hash>E", the hash
 * left out) and v0 ("_R...") schemes, cplus_demangle_v3_callback the
 * Itanium C++ ABI ("_Z...") that GCC and Clang use.  A "_Z" name is tried
 * as legacy Rust first, whose check is strict and cheap, then as C++.
 * Options: parameters and cv-qualifiers shown (DMGL_PARAMS | DMGL_ANSI);
 * never DMGL_NO_RECURSE_LIMIT, so the demangler's own recursion limits
 * apply (a static assertion below holds that).  A name that fails to
 * demangle, or that is not mangled, shows as it is.
 *
 * Bounds: the names are the target's, read from its ELF files, so they are
 * untrusted.
 *   - A mangled name longer than SYMNAME_MANGLED_MAX (1 KiB) is not
 *     demangled: the C++ demangler keeps its parse on the stack, in arrays
 *     sized by the name's length (about 72 bytes per mangled byte), and
 *     refuses longer names itself; the bound holds for Rust's too.
 *   - Output: a short mangled name can demangle to an exponential amount
 *     of text (a template argument that refers back to two copies of the
 *     one before it, 30 deep, is 300 bytes mangled and gigabytes printed;
 *     Rust v0 back-references do the same).  The demanglers print through
 *     our callback; once the work buffer (SYMNAME_WORK) is full the next
 *     callback leaves the demangler with siglongjmp, and the name is what
 *     was kept, cut.  Leaving that way is safe because the callback paths
 *     keep their state on the stack, with one exception: Rust v0 prints a
 *     punycode identifier from a malloc'ed buffer it frees after the
 *     callback returns.  Such a chunk always holds a non-ASCII byte
 *     (punycode only encodes code points >= 0x80), so for Rust the jump
 *     waits for the next chunk that is all ASCII -- a separator, which any
 *     repeated output has between its copies.
 *
 * Coroutines.  GCC compiles a C++20 coroutine into clones of the
 * coroutine function, "_Z4taskv.actor" (the body) and ".destroy"; Clang
 * into ".resume", ".destroy" and ".cleanup".  Demangled they read
 * "task() [clone .actor]": the clone marker of those four is dropped, so a
 * coroutine's frame shows as the coroutine ("task()"), which is what
 * corotop/coro.hpp promises.  Other clones (".cold", ".isra.0",
 * ".constprop.0") keep their marker: they are real, separate code.
 *
 * Shortening, to SYMNAME_MAX bytes, in steps, each only while the name is
 * still too long: template arguments collapse to "<...>" from the deepest
 * level up to the outermost; then parenthesized lists (parameters, lambda
 * signatures) to "(...)" the same way, "(anonymous namespace)" excepted;
 * then the middle of the name is cut to "...", keeping its first third and
 * its end, where the function's own name and parameters are.  Groups of
 * three bytes or less are never collapsed (that would not save a byte).
 * "operator<", "operator<<=", "operator<=>", "operator->" and any "->" are
 * not brackets.  So "std::vector<std::pair<int, int>, std::allocator<...>
 * >::push_back(std::pair<int, int> const&)" becomes
 * "std::vector<...>::push_back(std::pair<...> const&)" when it must.
 * A runtime's entry template too long to show keeps the program's function
 * it was made for instead (symname_keep_entry, symentry.c).
 */
#define _GNU_SOURCE
#include "engine/names/symname_internal.h"

#include <libiberty/demangle.h>
#include <setjmp.h>
#include <stdbool.h>
#include <string.h>

#define SYMNAME_DMGL (DMGL_PARAMS | DMGL_ANSI)
_Static_assert((SYMNAME_DMGL & DMGL_NO_RECURSE_LIMIT) == 0,
	       "the demangler's recursion limit must apply");
_Static_assert((SYMNAME_DMGL & DMGL_VERBOSE) == 0,
	       "Rust's legacy hash stays hidden");

/* The clone markers a coroutine's part keeps at most. */
#define SYMNAME_CLONES_MAX 128
/* A group collapses only when its contents are longer than this. */
#define SYMNAME_GROUP_MIN 3

/* The clone markers of a C++20 coroutine's parts (GCC, Clang). */
static const char *const symname_coro_clones[] = {
	" [clone .actor]",
	" [clone .resume]",
	" [clone .destroy]",
	" [clone .cleanup]",
};

static bool symname_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

/* demangle_callbackref: keep what fits, leave once it is full. */
static void symname_take(const char *s, size_t n, void *opaque)
{
	struct symname_work *w = opaque;
	size_t room = sizeof(w->text) - 1 - w->len;

	if (w->cut && (!w->rust || symname_ascii(s, n)))
		siglongjmp(w->stop, 1);
	if (n > room) {
		n = room;
		w->cut = true;
	}
	/* The Rust demangler prints an empty identifier as (NULL, 0). */
	if (n)
		memcpy(w->text + w->len, s, n);
	w->len += n;
}

/* One demangler over m (NUL-terminated).  Nonzero when it made a name
 * (all of it, or its beginning when w->cut). */
static int symname_run(struct symname_work *w, const char *m)
{
	if (sigsetjmp(w->stop, 0))
		return 1; /* symname_take left: w->text holds what fit */
	return w->rust ? rust_demangle_callback(m, SYMNAME_DMGL, symname_take,
						w)
		       : cplus_demangle_v3_callback(m, SYMNAME_DMGL,
						    symname_take, w);
}

static bool symname_try(struct symname_work *w, const char *m, bool rust)
{
	w->rust = rust;
	w->cut = false;
	w->len = 0;
	if (!symname_run(w, m)) {
		w->len = 0; /* a failed demangler may have printed a part */
		return false;
	}
	w->text[w->len] = '\0';
	return true;
}

/* Demangle m into w->text; false when m is not a name we demangle. */
static bool symname_demangle(struct symname_work *w, const char *m)
{
	if (m[0] != '_' || (m[1] != 'Z' && m[1] != 'R'))
		return false;
	if (symname_try(w, m, true))
		return true;
	return m[1] == 'Z' && symname_try(w, m, false);
}

/* Does t hold a coroutine clone marker? */
static bool symname_is_coro(const char *t)
{
	for (size_t k = 0;
	     k < sizeof(symname_coro_clones) / sizeof(symname_coro_clones[0]);
	     k++)
		if (strstr(t, symname_coro_clones[k]))
			return true;
	return false;
}

/*
 * GCC's coroutine parts take a pointer to a frame type local to the
 * coroutine, named after the coroutine's own mangled name:
 * "_ZN2ns5plainEPZNS_5plainEiE20_ZN2ns5plainEi.Frame.actor" holds the
 * source name "20_ZN2ns5plainEi.Frame".  Its "_Z..." (NUL-terminated in
 * place) is the coroutine; false when m holds no such name.
 */
static bool symname_gcc_ramp(char *m, const char **ramp)
{
	static const char frame[] = ".Frame";
	const size_t fl = sizeof(frame) - 1;

	for (char *p = strstr(m, frame); p; p = strstr(p + 1, frame))
		for (char *z = m + 1; z + 2 <= p; z++) {
			size_t want = (size_t)(p - z) + fl, got = 0, mul = 1;
			char *d = z;

			if (z[0] != '_' || z[1] != 'Z')
				continue;
			/* the source name's length, the digits before it */
			while (d > m && d[-1] >= '0' && d[-1] <= '9' &&
			       mul <= want) {
				got += (size_t)(d[-1] - '0') * mul;
				mul *= 10;
				d--;
			}
			if (d < z && got == want &&
			    !(d > m && d[-1] >= '0' && d[-1] <= '9')) {
				*p = '\0';
				*ramp = z;
				return true;
			}
		}
	return false;
}

/* Drop every coroutine clone marker from t (len bytes); the new length. */
static size_t symname_drop_clones(char *t, size_t len)
{
	for (size_t k = 0;
	     k < sizeof(symname_coro_clones) / sizeof(symname_coro_clones[0]);
	     k++) {
		const char *c = symname_coro_clones[k];
		size_t cl = strlen(c);
		char *p;

		t[len] = '\0';
		while ((p = strstr(t, c)) != NULL) {
			memmove(p, p + cl, len - (size_t)(p - t) - cl + 1);
			len -= cl;
		}
	}
	return len;
}

/*
 * w->text is a coroutine's part; m its mangled name.  GCC's name the
 * coroutine inside (symname_gcc_ramp): then w->text becomes the
 * coroutine's name, with the part's clone markers after it ("[clone
 * .actor] [clone .cold]"), which the caller drops or keeps.  Clang's
 * "_Z4taskv.resume" needs nothing more.
 */
static void symname_coro(struct symname_work *w, char *m)
{
	char clones[SYMNAME_CLONES_MAX];
	const char *ramp, *c = strstr(w->text, " [clone .");
	size_t cl = c ? strlen(c) : 0;

	if (!c || cl >= sizeof(clones) || !symname_gcc_ramp(m, &ramp))
		return;
	memcpy(clones, c, cl + 1);
	if (!symname_demangle(w, ramp) || w->cut) {
		/* not a name after all: the part's own, demangled again */
		m[strlen(m)] = '.';
		symname_demangle(w, m);
		return;
	}
	if (cl > sizeof(w->text) - 1 - w->len)
		cl = sizeof(w->text) - 1 - w->len;
	memcpy(w->text + w->len, clones, cl);
	w->len += cl;
	w->text[w->len] = '\0';
}

/* ---- shortening ------------------------------------------------------- */

/* Does t[0..i) end with `word`? */
static bool symname_ends(const char *t, size_t i, const char *word)
{
	size_t n = strlen(word);

	return i >= n && !memcmp(t + i - n, word, n);
}

/*
 * What t[i] is for brackets `open`/`close`: 1 opens a group, -1 closes
 * one, 0 is text.  *skip is how many bytes it spans (an operator's name
 * is text, several bytes long).
 */
int symname_bracket(const char *t, size_t len, size_t i, char open, char close,
		    size_t *skip)
{
	*skip = 1;
	if (t[i] != open && t[i] != close)
		return 0;
	if (open == '<' && symname_ends(t, i, "operator")) {
		/* operator<, <<, <=, <<=, <=>; operator>, >>, >=, >>= */
		while (*skip < 3 && i + *skip < len && t[i + *skip] &&
		       strchr("<>=", t[i + *skip]))
			(*skip)++;
		return 0;
	}
	if (t[i] == '>' && i > 0 && t[i - 1] == '-')
		return 0; /* operator->, "a->b", Rust's "fn() -> T" */
	return t[i] == open ? 1 : -1;
}

/* The deepest nesting of open/close in t. */
static int symname_depth(const char *t, size_t len, char open, char close)
{
	int depth = 0, max = 0;
	size_t skip;

	for (size_t i = 0; i < len; i += skip) {
		depth += symname_bracket(t, len, i, open, close, &skip);
		if (depth < 0)
			depth = 0; /* a stray close: ignore it */
		if (depth > max)
			max = depth;
	}
	return max;
}

/* The index of the close matching the open at t[i], or len. */
static size_t symname_match(const char *t, size_t len, size_t i, char open,
			    char close)
{
	int depth = 0;
	size_t skip;

	for (; i < len; i += skip) {
		depth += symname_bracket(t, len, i, open, close, &skip);
		if (depth == 0)
			return i;
	}
	return len;
}

/*
 * Collapse every group of open/close in t at nesting level d or deeper to
 * "<...>", into out (which has room for len bytes: the text only
 * shrinks).  The new length.
 */
static size_t symname_collapse(const char *t, size_t len, char *out, char open,
			       char close, int d)
{
	static const char anon[] = "(anonymous namespace)";
	size_t o = 0, skip;
	int depth = 0;

	for (size_t i = 0; i < len; i += skip) {
		int b = symname_bracket(t, len, i, open, close, &skip);
		size_t end;

		if (b > 0 && depth + 1 == d) {
			end = symname_match(t, len, i, open, close);
			if (end - i - 1 > SYMNAME_GROUP_MIN &&
			    !(open == '(' && end < len &&
			      end - i + 1 == sizeof(anon) - 1 &&
			      !memcmp(t + i, anon, sizeof(anon) - 1))) {
				out[o++] = open;
				memcpy(out + o, "...", 3);
				o += 3;
				if (end == len)
					return o; /* never closed: cut here */
				out[o++] = close;
				skip = end - i + 1;
				continue;
			}
		}
		depth += b;
		if (depth < 0)
			depth = 0;
		memcpy(out + o, t + i, skip);
		o += skip;
	}
	return o;
}

/* symname_fit's first step: the deepest brackets collapsed first, '<'
 * before '(', until the text fits in max or none is left; its length. */
size_t symname_collapse_to(char *t, size_t len, char *spare, size_t max)
{
	static const char brackets[][2] = {{'<', '>'}, {'(', ')'}};

	for (size_t k = 0; k < 2 && len > max; k++)
		for (int d = symname_depth(t, len, brackets[k][0],
					   brackets[k][1]);
		     d >= 1 && len > max; d--) {
			len = symname_collapse(t, len, spare, brackets[k][0],
					       brackets[k][1], d);
			memcpy(t, spare, len);
		}
	return len;
}

/* Shorten w->text (w->len bytes) to at most max bytes, with spare as the
 * second buffer collapsing needs. */
void symname_fit(struct symname_work *w, char *spare, size_t max)
{
	size_t head, tail, len;
	char *t = w->text;

	len = symname_collapse_to(t, w->len, spare, max);
	if (len > max && max < 4) {
		len = max; /* no room for "x...": the first bytes */
	} else if (len > max) {
		head = max / 3;
		tail = max - head - 3;
		memmove(t + head + 3, t + len - tail, tail);
		memcpy(t + head, "...", 3);
		len = max;
	}
	w->len = len;
}
/* ---- the API ---------------------------------------------------------- */

size_t symname_format(const char *raw, size_t len, char *buf, size_t n)
{
	struct symname_work w;
	/* The mangled name, NUL-terminated; later symname_fit's spare. */
	char mangled[SYMNAME_WORK];
	size_t max = n ? n - 1 : 0;
	const char *at;

	if (!n)
		return 0;
	if (max > SYMNAME_MAX)
		max = SYMNAME_MAX;
	/* "clock_gettime@@GLIBC_2.17" shows as "clock_gettime" */
	at = memchr(raw, '@', len);
	len = at ? (size_t)(at - raw) : len;
	len = strnlen(raw, len);
	if (len <= SYMNAME_MANGLED_MAX) {
		memcpy(mangled, raw, len);
		mangled[len] = '\0';
	}
	if (len <= SYMNAME_MANGLED_MAX && symname_demangle(&w, mangled)) {
		if (symname_is_coro(w.text))
			symname_coro(&w, mangled);
		w.len = symname_drop_clones(w.text, w.len);
		if (w.cut && w.len >= 3)
			memcpy(w.text + w.len - 3, "...", 3);
	} else {
		/* As it is: at most its first SYMNAME_WORK - 1 bytes. */
		w.len = len < sizeof(w.text) ? len : sizeof(w.text) - 4;
		memcpy(w.text, raw, w.len);
		if (w.len < len) {
			memcpy(w.text + w.len, "...", 3);
			w.len += 3;
		}
	}
	if (w.len > max)
		symname_keep_entry(&w, mangled, max);
	symname_fit(&w, mangled, max);
	memcpy(buf, w.text, w.len);
	buf[w.len] = '\0';
	return w.len;
}

/* Does where[0..len) end with " (FILE:LINE)"?  Its start, or len. */
static size_t symname_file_suffix(const char *where, size_t len)
{
	const char *open, *colon;
	size_t i = len;

	if (!len || where[len - 1] != ')')
		return len;
	while (i > 1 && where[i - 2] >= '0' && where[i - 2] <= '9')
		i--;
	if (i == len || i < 3 || where[i - 2] != ':')
		return len;
	colon = where + i - 2;
	for (open = colon; open > where + 1; open--)
		if (open[-1] == ' ' && open[0] == '(')
			return (size_t)(open - 1 - where);
	return len;
}

size_t symname_function_len(const char *where)
{
	size_t len = strlen(where), found = len;

	for (const char *p = strstr(where, "+0x"); p;
	     p = strstr(p + 1, "+0x")) {
		const char *q = p + 3;

		while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') ||
		       (*q >= 'A' && *q <= 'F'))
			q++;
		if (q > p + 3 && (!*q || !strncmp(q, " (", 2)))
			found = (size_t)(p - where);
	}
	return found < len ? found : symname_file_suffix(where, len);
}
