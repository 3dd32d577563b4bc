/*
 * symentry: the program's function a runtime's entry template was made
 * for -- the function a context is made to run (Boost.Context's
 * fiber_entry, fiber_entry_func, context_entry and entry_func,
 * Boost.Coroutine's trampolines), instantiated for the program's own --
 * found again in its template arguments, so that a coroutine is named
 * after the function it runs (framekind_coro_name) and an entry's name
 * too long to show keeps it (symname_format).  Where to look: F of
 * Boost.Fiber's worker_context<F> (or a std::bind's callee, or a
 * packaged_task's signature), else the first of the program's names
 * among the arguments, each list's last first.  The text is untrusted:
 * every scan is bounded and brackets are matched.
 *
 * Part of symname (symname.h declares symname_entry, so its callers see
 * one header); what the two files share is in symname_internal.h.
 */
#define _GNU_SOURCE
#include "engine/names/symname_internal.h"

#include <stdbool.h>
#include <string.h>

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
void symname_keep_entry(struct symname_work *w, char *spare, size_t max)
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
