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
 */
#define _GNU_SOURCE
#include "engine/names/symname.h"

#include <libiberty/demangle.h>
#include <setjmp.h>
#include <stdbool.h>
#include <string.h>

#define SYMNAME_DMGL (DMGL_PARAMS | DMGL_ANSI)
_Static_assert((SYMNAME_DMGL & DMGL_NO_RECURSE_LIMIT) == 0,
	       "the demangler's recursion limit must apply");
_Static_assert((SYMNAME_DMGL & DMGL_VERBOSE) == 0,
	       "Rust's legacy hash stays hidden");

/* The demangler's output kept; past it the demangler is stopped. */
#define SYMNAME_WORK 4096
_Static_assert(SYMNAME_MANGLED_MAX < SYMNAME_WORK,
	       "a mangled name fits the work buffers");
/* The clone markers a coroutine's part keeps at most. */
#define SYMNAME_CLONES_MAX 128
/* A group collapses only when its contents are longer than this. */
#define SYMNAME_GROUP_MIN 3

struct symname_work {
	sigjmp_buf stop; /* where the callback leaves the demangler */
	bool rust;	 /* Rust's demangler: leave only on ASCII chunks */
	bool cut;	 /* output was dropped: text is its beginning */
	size_t len;
	char text[SYMNAME_WORK];
};

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
static int symname_bracket(const char *t, size_t len, size_t i, char open,
			   char close, size_t *skip)
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

/* Shorten w->text (w->len bytes) to at most max bytes, with spare as the
 * second buffer collapsing needs. */
/* symname_fit's first step: the deepest brackets collapsed first, '<'
 * before '(', until the text fits in max or none is left; its length. */
static size_t symname_collapse_to(char *t, size_t len, char *spare, size_t max)
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

static void symname_fit(struct symname_work *w, char *spare, size_t max)
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

/* ---- entries --------------------------------------------------------- */

/* A runtime's templates a context is made to run: fiber (fcontext and
 * ucontext), callcc/continuation (the same two), Boost.Coroutine's
 * trampolines (trampoline<, trampoline_pull<, trampoline_push_void<...). */
static const char *const symname_entries[] = {
	"boost::context::detail::fiber_entry<",
	"boost::context::detail::fiber_entry_func<",
	"boost::context::detail::context_entry<",
	"boost::context::detail::entry_func<",
	"boost::coroutines::detail::trampoline",
};

/* Names that are a runtime's, or a type of the language's. */
static const char *const symname_not_program[] = {
	"boost::",  "std::",	"__gnu_cxx::", "void",	   "bool",
	"char",	    "wchar_t",	"short",       "int",	   "long",
	"unsigned", "signed",	"float",       "double",   "decltype",
	"char8_t",  "char16_t", "char32_t",    "__int128", "nullptr_t",
};

/* Deeper nesting than this in an entry's arguments: not looked into. */
#define SYMNAME_NEST_MAX 64
/* Arguments of one template list looked at, at most. */
#define SYMNAME_ARGS_MAX 16
/* The worker Boost.Fiber runs a fiber's function F in. */
static const char symname_worker[] = "boost::fibers::worker_context<";

/* Where a name's qualified part starts: past a return type, i.e. after
 * the last space before the first '(' or '<' (framekind's rule). */
static size_t symname_qualified(const char *t, size_t len)
{
	size_t start = 0;

	for (size_t i = 0; i < len && t[i] != '(' && t[i] != '<'; i++)
		if (t[i] == ' ')
			start = i + 1;
	return start;
}

/* +1 when t[i] opens a bracket of any kind, -1 when it closes one, 0 for
 * text ('<' and '>' as symname_bracket reads them); *skip as there. */
static int symname_any_bracket(const char *t, size_t len, size_t i,
			       size_t *skip)
{
	*skip = 1;
	if (t[i] == '<' || t[i] == '>')
		return symname_bracket(t, len, i, '<', '>', skip);
	if (t[i] == '(' || t[i] == '{' || t[i] == '[')
		return 1;
	if (t[i] == ')' || t[i] == '}' || t[i] == ']')
		return -1;
	return 0;
}

/* The close matching the bracket t[i] opens, every kind nested and
 * paired; len when it has none (unbalanced, or too deep). */
static size_t symname_close(const char *t, size_t len, size_t i)
{
	static const char opens[] = "<({[", closes[] = ">)}]";
	char stack[SYMNAME_NEST_MAX];
	size_t depth = 0, skip;

	for (; i < len; i += skip) {
		int b = symname_any_bracket(t, len, i, &skip);
		char c = t[i];

		if (b > 0) {
			if (depth == SYMNAME_NEST_MAX)
				return len;
			stack[depth++] = c;
		} else if (b < 0) {
			if (!depth || stack[depth - 1] !=
					      opens[strchr(closes, c) - closes])
				return len;
			if (!--depth)
				return i;
		}
	}
	return len;
}

/* The end of the template argument that starts at t[i], in a list that
 * ends at t[end]: the next ',' outside brackets, or end. */
static size_t symname_arg_end(const char *t, size_t end, size_t i)
{
	int depth = 0;
	size_t skip;

	for (; i < end; i += skip) {
		depth += symname_any_bracket(t, end, i, &skip);
		if (!depth && t[i] == ',')
			return i;
	}
	return end;
}

/* Whether template argument t[0..len) names the program's code; its text
 * without blanks and the shortening's "..." marks in *at, *alen. */
static bool symname_program_arg(const char *t, size_t len, const char **at,
				size_t *alen)
{
	size_t skip;
	int depth = 0;

	while (len && t[0] == ' ')
		t++, len--;
	while (len && t[len - 1] == ' ')
		len--;
	if (len >= 3 && !memcmp(t, "...", 3))
		t += 3, len -= 3;
	if (len >= 3 && !memcmp(t + len - 3, "...", 3))
		len -= 3;
	/* A reference to the program's object names its type (a fiber of
	 * a function object passed on by a template as Fn&: Boost's
	 * priority.cpp, worker_context<main::{lambda()#1}&>). */
	if (len && t[len - 1] == '&' && (len < 2 || t[len - 2] != ')')) {
		while (len && (t[len - 1] == '&' || t[len - 1] == ' '))
			len--;
		if (len >= 6 && !memcmp(t + len - 6, " const", 6))
			len -= 6;
	}
	/* A value (3, -1, (char)1), a pointer, a reference to a function,
	 * none at all. */
	if (!len || (t[0] >= '0' && t[0] <= '9') || t[0] == '-' ||
	    t[0] == '(' || t[len - 1] == '*' || t[len - 1] == '&')
		return false;
	for (size_t k = 0;
	     k < sizeof(symname_not_program) / sizeof(symname_not_program[0]);
	     k++) {
		size_t wl = strlen(symname_not_program[k]);

		if (len >= wl && !memcmp(t, symname_not_program[k], wl) &&
		    (symname_not_program[k][wl - 1] == ':' || len == wl ||
		     strchr(" (*&<", t[wl])))
			return false;
	}
	/* A function's type ("void (int)"): a list outside any bracket --
	 * but for the function a local entity is in, whose list is followed
	 * by "::" ("start(int)::{lambda()#1}", "f() const::{lambda()#2}"). */
	for (size_t i = 0; i < len; i += skip) {
		int b = symname_any_bracket(t, len, i, &skip);

		if (b > 0 && !depth && t[i] == '(') {
			size_t c = symname_close(t, len, i), q = c + 1;

			if (c < len && len - q >= 6 &&
			    !memcmp(t + q, " const", 6))
				q += 6;
			if (c == len || len - q < 2 || memcmp(t + q, "::", 2))
				return false;
			skip = q - i;
			continue;
		}
		depth += b;
	}
	*at = t;
	*alen = len;
	return true;
}

static void symname_copy(const char *t, size_t len, char *out, size_t n)
{
	if (len >= n)
		len = n - 1;
	memcpy(out, t, len);
	out[len] = '\0';
}

/* The list of template arguments t[start..end): its arguments, the last
 * first, until one is the program's (true: its text in *at, *alen). */
static bool symname_list_find(const char *t, size_t start, size_t end,
			      const char **at, size_t *alen)
{
	size_t arg[SYMNAME_ARGS_MAX], na = 0;

	for (size_t j = start; na < SYMNAME_ARGS_MAX;) {
		arg[na++] = j;
		j = symname_arg_end(t, end, j);
		if (j >= end)
			break;
		j++;
	}
	for (size_t k = na; k-- > 0;)
		if (symname_program_arg(
			    t + arg[k],
			    symname_arg_end(t, end, arg[k]) - arg[k], at, alen))
			return true;
	return false;
}

/* F of worker_context<F> is the program's: F itself, or the callee of a
 * std::bind (std::_Bind<CALLEE (ARGS)>, Boost's wait_stuff.cpp: a lambda
 * bound to its arguments).  Its text in *at, *alen. */
static bool symname_worker_arg(const char *t, size_t len, const char **at,
			       size_t *alen)
{
	static const char bind[] = "std::_Bind<";
	static const char task[] = "boost::fibers::packaged_task<";
	const size_t bl = sizeof(bind) - 1, tl = sizeof(task) - 1;
	size_t end, open = 0, skip;
	int depth = 0;

	if (symname_program_arg(t, len, at, alen))
		return true;
	while (len && t[0] == ' ')
		t++, len--;
	/* boost::fibers::async's fiber (or one made for a packaged_task):
	 * named for what it runs, "packaged_task<int ()>" -- the function
	 * is in the task's heap object, out of reach of its name. */
	if (len > tl && !memcmp(t, task, tl) &&
	    symname_close(t, len, tl - 1) == len - 1) {
		*at = t + tl - sizeof("packaged_task<") + 1;
		*alen = len - (size_t)(*at - t);
		return true;
	}
	if (len <= bl || memcmp(t, bind, bl))
		return false;
	end = symname_close(t, len, bl - 1);
	if (end == len)
		return false;
	/* CALLEE (ARGS): the last list outside brackets, after a blank. */
	for (size_t i = bl; i < end; i += skip) {
		int b = symname_any_bracket(t, end, i, &skip);

		if (b > 0 && !depth && t[i] == '(' && t[i - 1] == ' ')
			open = i;
		depth += b;
	}
	return open > bl + 1 &&
	       symname_program_arg(t + bl, open - 1 - bl, at, alen);
}

/* The program's function in the arguments t[0..len) of an entry: see
 * symname_entry.  Its text in *at, *alen; false when none is. */
static bool symname_entry_find(const char *t, size_t len, const char **at,
			       size_t *alen)
{
	const size_t wl = sizeof(symname_worker) - 1;
	size_t skip, end;

	/* Boost.Fiber: F of worker_context<F>, wherever it appears. */
	for (size_t i = 0; i + wl <= len; i++)
		if (!memcmp(t + i, symname_worker, wl)) {
			size_t lt = i + wl - 1;

			end = symname_close(t, len, lt);
			if (end < len &&
			    symname_worker_arg(t + lt + 1,
					       symname_arg_end(t, end, lt + 1) -
						       lt - 1,
					       at, alen))
				return true;
		}
	/* The entry's own list, then every template list in it, outer ones
	 * first; in each, its last argument first (a record's Fn comes
	 * after its allocator). */
	if (symname_list_find(t, 0, len, at, alen))
		return true;
	for (size_t i = 0; i < len; i += skip) {
		if (symname_bracket(t, len, i, '<', '>', &skip) <= 0)
			continue;
		end = symname_close(t, len, i);
		if (end < len && symname_list_find(t, i + 1, end, at, alen))
			return true;
	}
	return false;
}

/* Is t[q..len) an entry?  The '<' that opens its arguments, or len. */
static size_t symname_entry_open(const char *t, size_t len, size_t q)
{
	for (size_t k = 0;
	     k < sizeof(symname_entries) / sizeof(symname_entries[0]); k++) {
		size_t el = strlen(symname_entries[k]);
		const char *lt;

		if (len - q < el || memcmp(t + q, symname_entries[k], el))
			continue;
		lt = memchr(t + q + el - 1, '<', len - q - el + 1);
		return lt ? (size_t)(lt - t) : len;
	}
	return len;
}

bool symname_entry(const char *function, char *out, size_t n)
{
	size_t len, q, lt, end, alen;
	const char *at;

	if (n)
		out[0] = '\0';
	if (!function)
		return false;
	len = strnlen(function, SYMNAME_WORK);
	q = symname_qualified(function, len);
	lt = symname_entry_open(function, len, q);
	if (lt == len)
		return false;
	end = symname_close(function, len, lt);
	if (n && end < len &&
	    symname_entry_find(function + lt + 1, end - lt - 1, &at, &alen))
		symname_copy(at, alen, out, n);
	return true;
}

/* A function kept in an entry (symname_keep_entry) fitted to max without
 * cutting into a bracket, so that it still reads as a name: collapsed as
 * symname_fit does, then, still too long, the name before its first
 * bracket cut and joined to a local entity's tail
 * ("wait_first_simple_i...::{lambda()#1}"); symname_fit's cut when it has
 * no such tail or no room for one. */
static void symname_fit_kept(struct symname_work *f, char *spare, size_t max)
{
	size_t len = symname_collapse_to(f->text, f->len, spare, max);
	size_t base = strcspn(f->text, "<({"), tail = len, keep;

	f->len = len;
	for (size_t i = len; i-- > 2;)
		if (!memcmp(f->text + i - 2, "::{", 3)) {
			tail = i - 2;
			break;
		}
	if (len <= max || tail == len || max < 4 + 3 + (len - tail)) {
		symname_fit(f, spare, max);
		return;
	}
	keep = max - 3 - (len - tail);
	if (keep > base)
		keep = base;
	if (keep > tail)
		keep = tail;
	memmove(f->text + keep + 3, f->text + tail, len - tail);
	memcpy(f->text + keep, "...", 3);
	f->len = keep + 3 + (len - tail);
}

/* An entry too long to show whole keeps the program's function it was made
 * for: "void boost::context::detail::fiber_entry<...main::{lambda()#2}
 * ...>(boost::context::detail::transfer_t)", the rest of its arguments
 * dropped, that function itself shortened (symname_fit) to what room the
 * rest leaves in max.  spare: SYMNAME_WORK bytes. */
static void symname_keep_entry(struct symname_work *w, char *spare, size_t max)
{
	size_t q = symname_qualified(w->text, w->len), lt, end, alen, o, room;
	struct symname_work f;
	const char *at;

	lt = symname_entry_open(w->text, w->len, q);
	if (lt == w->len)
		return;
	end = symname_close(w->text, w->len, lt);
	if (end == w->len ||
	    !symname_entry_find(w->text + lt + 1, end - lt - 1, &at, &alen))
		return;
	/* The function's room: "...F..." between the brackets. */
	o = lt + 1 + 6 + (w->len - end);
	room = max > o ? max - o : 0;
	if (room < 8)
		return;
	memcpy(f.text, at, alen);
	f.len = alen;
	symname_fit_kept(&f, spare, room);
	memcpy(spare, w->text, lt + 1);
	o = lt + 1;
	memcpy(spare + o, "...", 3);
	memcpy(spare + o + 3, f.text, f.len);
	o += 3 + f.len;
	memcpy(spare + o, "...", 3);
	o += 3;
	memcpy(spare + o, w->text + end, w->len - end);
	o += w->len - end;
	memcpy(w->text, spare, o);
	w->len = o;
	w->text[o] = '\0';
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
