/*
 * symtab: one symbolizer for the target, created on first use, refreshed at
 * most once a second, behind a mutex so the UI thread (WHERE column, detail
 * view) and the printers can share it.
 *
 * Lazy creation matters: at launch the target has not loaded its libraries
 * yet, and a run that never shows a WHERE cell never pays for symbols.  A
 * refresh re-reads the target's mappings (dlopen'd libraries); when it may
 * have changed what an address means, `gen` moves so that cached results
 * derived from names (the filter's memo) are recomputed.
 *
 * A program can exit before anything asks for a name (a run of 10 ms under
 * `corotop -b`): then /proc/PID/maps is empty or gone, and nothing could
 * be named.  So the engine keeps its maps from the first sign of it (the
 * probe's connection, the first events: symtab_keep_maps, keptmaps.c),
 * under a lock of its own, and a
 * symbolizer made or refreshed after the exit reports those
 * (symbolizer_create_kept); symtab_settle makes it at the exit.  A failed
 * creation is retried when a newer copy was kept since.
 *
 * Lookups are cached by the symbolizer itself; a miss can read debug info
 * and take microseconds, which is why the table formats only visible rows.
 */
#define _GNU_SOURCE
#include "engine/symbols/symtab.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/numtext.h"
#include "engine/names/framekind.h"
#include "engine/symbols/symbolizer.h"
#include "engine/names/symname.h"
#include "common/clock.h"

#define SYMTAB_REFRESH_NS 1000000000ull

#define SYMTAB_CLOCK_EVERY 256u

void symtab_init(struct symtab *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	keptmaps_init(&t->kept);
}

void symtab_finish(struct symtab *t)
{
	for (size_t k = 0; k < SYMTAB_OTHERS; k++)
		symbolizer_destroy(t->other[k].sym);
	symbolizer_destroy(t->sym);
	keptmaps_finish(&t->kept);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

void symtab_set_pid(struct symtab *t, pid_t pid)
{
	pthread_mutex_lock(&t->lock);
	if (pid != t->pid) {
		symbolizer_destroy(t->sym);
		t->sym = NULL;
		t->fixed = false;
		t->failed = false;
		t->pid = pid;
		t->gen++;
	}
	pthread_mutex_unlock(&t->lock);
}

void symtab_set_symbolizer(struct symtab *t, struct symbolizer *sym)
{
	pthread_mutex_lock(&t->lock);
	symbolizer_destroy(t->sym);
	t->sym = sym;
	t->fixed = true;
	t->failed = !sym;
	t->gen++;
	pthread_mutex_unlock(&t->lock);
}

static struct symbolizer *symtab_get(struct symtab *t);

bool symtab_find_object(struct symtab *t, const char *name, uint64_t *addr)
{
	struct symbolizer *s;
	bool ok;

	pthread_mutex_lock(&t->lock);
	s = symtab_get(t);
	ok = s && symbolizer_find_object(s, name, addr);
	pthread_mutex_unlock(&t->lock);
	return ok;
}

void symtab_set_framekind(struct symtab *t, const struct framekind *k)
{
	pthread_mutex_lock(&t->lock);
	t->kind = k;
	t->gen++;
	pthread_mutex_unlock(&t->lock);
}

void symtab_set_recorded(struct symtab *t,
			 const char *(*fn)(void *ctx, uint64_t addr), void *ctx)
{
	pthread_mutex_lock(&t->lock);
	t->recorded = fn;
	t->recorded_ctx = ctx;
	t->gen++;
	pthread_mutex_unlock(&t->lock);
}

/* With the lock held: the recorded name of addr, or NULL. */
static const char *symtab_recorded(struct symtab *t, uint64_t addr)
{
	return t->recorded ? t->recorded(t->recorded_ctx, addr) : NULL;
}

/* A recorded "func+0xOFF (file:N)" into out's fields.  func may hold
 * spaces, '+' and parentheses (a C++ name): symname_function_len finds
 * where it ends. */
static void symtab_parse(const char *name, struct symtab_sym *out)
{
	size_t flen = symname_function_len(name);
	const char *rest = name + flen, *paren = strstr(rest, " (");

	if (flen >= sizeof(out->function))
		flen = sizeof(out->function) - 1;
	memcpy(out->function, name, flen);
	out->function[flen] = 0;
	if (!strncmp(rest, "+0x", 3))
		out->offset = strtoull(rest + 3, NULL, 16);
	snprintf(out->module, sizeof(out->module), "%s", "recorded");
	if (paren) {
		const char *colon = strrchr(paren, ':');
		size_t n = colon ? (size_t)(colon - paren - 2) : 0;

		if (colon && n < sizeof(out->file)) {
			memcpy(out->file, paren + 2, n);
			out->file[n] = 0;
			out->line = atoi(colon + 1);
		}
	}
}

/* How much of a recorded name is its brief form: "func+0xOFF" without
 * " (file:N)". */
static size_t symtab_brief_len(const char *name)
{
	size_t flen = symname_function_len(name);
	const char *paren = strstr(name + flen, " (");

	return paren ? (size_t)(paren - name) : strlen(name);
}

/* With the lock held: the symbolizer created, or refreshed when its
 * last refresh is SYMTAB_REFRESH_NS old; it, or NULL. */
static struct symbolizer *symtab_tick(struct symtab *t)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
	struct keptmaps_copy *c;

	t->calls = 0;
	if (!t->sym) {
		c = keptmaps_get(&t->kept, t->pid);
		t->sym = symbolizer_create_kept(t->pid, c ? &c->view : NULL,
						t->error, sizeof(t->error));
		/* Made before any copy: whether its paths are ours is the
		 * keeper's, found while it ran. */
		if (!c && keptmaps_same_root(&t->kept, t->pid))
			symbolizer_saw_root(t->sym);
		t->failed = !t->sym;
		t->failed_seq = c ? c->seq : 0;
		keptmaps_put(&t->kept, c);
		t->refreshed_ns = now;
		t->gen++;
		return t->sym;
	}
	if (now - t->refreshed_ns >= SYMTAB_REFRESH_NS) {
		struct symbolizer_stats before, after;

		c = keptmaps_get(&t->kept, t->pid);
		symbolizer_stats(t->sym, &before);
		symbolizer_refresh_kept(t->sym, c ? &c->view : NULL);
		keptmaps_put(&t->kept, c);
		symbolizer_stats(t->sym, &after);
		/* A refresh empties the cache when the modules changed, or
		 * were reported anew with fetched debug info. */
		if (after.cached < before.cached ||
		    after.modules != before.modules ||
		    after.reloads != before.reloads)
			t->gen++;
		t->refreshed_ns = now;
	}
	return t->sym;
}

/* With the lock held: whether a creation that failed may be retried (a
 * copy of the maps was kept since). */
static bool symtab_retry(struct symtab *t)
{
	struct keptmaps_copy *c = keptmaps_get(&t->kept, t->pid);
	bool newer = c && c->seq != t->failed_seq;

	keptmaps_put(&t->kept, c);
	return newer;
}

/* With the lock held: a usable symbolizer, or NULL. */
static struct symbolizer *symtab_get(struct symtab *t)
{
	if (t->fixed)
		return t->sym;
	if (!t->pid || (t->failed && !symtab_retry(t)))
		return NULL;
	/* The clock is read every SYMTAB_CLOCK_EVERY lookups: a filter over
	 * 100k new addresses asks 100k times within a millisecond or so. */
	if (t->sym && ++t->calls < SYMTAB_CLOCK_EVERY)
		return t->sym;
	return symtab_tick(t);
}

/* With the lock held: process pid's symbolizer (not the target's), made
 * on first use and refreshed as the target's is; or NULL. */
static struct symbolizer *symtab_get_other(struct symtab *t, pid_t pid)
{
	struct symtab_other *o = NULL, *lru = &t->other[0];
	uint64_t now;

	for (size_t k = 0; k < SYMTAB_OTHERS && !o; k++) {
		if (t->other[k].pid == pid)
			o = &t->other[k];
		else if (t->other[k].used < lru->used)
			lru = &t->other[k];
	}
	if (!o) {
		char err[160];

		o = lru;
		symbolizer_destroy(o->sym);
		memset(o, 0, sizeof(*o));
		o->pid = pid;
		o->sym = symbolizer_create(pid, err, sizeof(err));
		o->failed = !o->sym;
		o->refreshed_ns = clock_now_ns(CLOCK_MONOTONIC);
		t->gen++;
	}
	o->used = ++t->uses;
	if (o->failed)
		return NULL;
	now = clock_now_ns(CLOCK_MONOTONIC);
	if (now - o->refreshed_ns >= SYMTAB_REFRESH_NS) {
		symbolizer_refresh(o->sym);
		o->refreshed_ns = now;
	}
	return o->sym;
}

/* Tick the symbolizer unless another thread holds it (whoever holds the
 * lock is using it, or making it); `make`: also make it.  True with *gen
 * when the lock was taken. */
static bool symtab_try_tick(struct symtab *t, bool make, uint32_t *gen)
{
	if (pthread_mutex_trylock(&t->lock))
		return false;
	if (!t->fixed && t->pid && (!t->failed || symtab_retry(t)) &&
	    !t->recorded && (make || t->sym))
		(void)symtab_tick(t);
	*gen = t->gen;
	pthread_mutex_unlock(&t->lock);
	return true;
}

bool symtab_prime(struct symtab *t)
{
	uint32_t gen;

	return symtab_try_tick(t, true, &gen);
}

bool symtab_expect(struct symtab *t, pid_t pid, const char *file)
{
	return keptmaps_expect(&t->kept, pid, file);
}

bool symtab_keep_maps(struct symtab *t, pid_t pid, uint64_t now)
{
	return keptmaps_keep(&t->kept, pid, now, SYMTAB_KEEP_NS);
}

void symtab_kept_stats(struct symtab *t, struct keptmaps_stats *out)
{
	keptmaps_get_stats(&t->kept, out);
}

void symtab_settle(struct symtab *t)
{
	/* One last keep: none may have been made while it ran (then the
	 * copy its probe made at its start: keptmaps_expect). */
	if (t->fixed)
		return;
	if (t->pid > 0)
		(void)keptmaps_keep(&t->kept, t->pid,
				    clock_now_ns(CLOCK_MONOTONIC), 0);
	pthread_mutex_lock(&t->lock);
	if (t->pid && !t->recorded && (!t->failed || symtab_retry(t))) {
		t->refreshed_ns = 0; /* due now */
		(void)symtab_tick(t);
	}
	pthread_mutex_unlock(&t->lock);
}

bool symtab_poll(struct symtab *t, uint32_t *gen)
{
	return symtab_try_tick(t, false, gen);
}

void symtab_hex(uint64_t addr, char *buf, size_t n)
{
	if (n > 2) {
		buf[0] = '0';
		buf[1] = 'x';
		numtext_hex(buf + 2, n - 2, addr);
	} else if (n) {
		buf[0] = '\0';
	}
}

const char *symtab_where(struct symtab *t, uint64_t addr, bool call_site,
			 bool full, char *buf, size_t n)
{
	return symtab_where_in(t, 0, addr, call_site, full, buf, n);
}

const char *symtab_where_in(struct symtab *t, pid_t pid, uint64_t addr,
			    bool call_site, bool full, char *buf, size_t n)
{
	uint64_t at = call_site && addr ? addr - 1 : addr;
	struct symbolizer *s;
	struct symbol sym;

	if (!n)
		return buf;
	if (pid < 0) {
		symtab_hex(addr, buf, n);
		return buf;
	}
	pthread_mutex_lock(&t->lock);
	s = !pid || pid == t->pid ? symtab_get(t)
	    : t->recorded	  ? NULL
				  : symtab_get_other(t, pid);
	/* A return address no call precedes: a trampoline's start pushed as
	 * one (makecontext's __start_context).  Before it lies no function,
	 * at it one begins: named at itself. */
	if (s && at != addr &&
	    !(symbolizer_lookup(s, at, &sym) && sym.function) &&
	    symbolizer_lookup(s, addr, &sym) && sym.function && !sym.offset)
		at = addr;
	if (s && full) {
		symbolizer_format(s, at, buf, n);
		if (!strncmp(buf, "0x", 2)) /* no name: the address itself */
			symtab_hex(addr, buf, n);
	} else if (s && symbolizer_lookup(s, at, &sym) && sym.function) {
		snprintf(buf, n, "%s+0x%" PRIx64, sym.function, sym.offset);
	} else if (s && sym.module) {
		snprintf(buf, n, "%s+0x%" PRIx64, sym.module, sym.offset);
	} else if (!s && (symtab_recorded(t, at) || symtab_recorded(t, addr))) {
		/* A recording keeps a where's name under its call site
		 * (framename_key); one made before that, under addr. */
		const char *r = symtab_recorded(t, at)
					? symtab_recorded(t, at)
					: symtab_recorded(t, addr);

		snprintf(buf, n, "%.*s",
			 (int)(full ? strlen(r) : symtab_brief_len(r)), r);
	} else {
		symtab_hex(addr, buf, n);
	}
	pthread_mutex_unlock(&t->lock);
	return buf;
}

static void symtab_copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

bool symtab_lookup(struct symtab *t, uint64_t addr, struct symtab_sym *out)
{
	struct symbolizer *s;
	struct symbol sym;
	bool found = false;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&t->lock);
	s = symtab_get(t);
	if (s && symbolizer_lookup(s, addr, &sym) && sym.module) {
		symtab_copy(out->function, sizeof(out->function), sym.function);
		symtab_copy(out->module, sizeof(out->module), sym.module);
		symtab_copy(out->file, sizeof(out->file), sym.file);
		out->line = sym.file ? sym.line : 0;
		out->offset = sym.offset;
		found = true;
	} else if (!s && symtab_recorded(t, addr)) {
		symtab_parse(symtab_recorded(t, addr), out);
		found = true;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

uint32_t symtab_gen(struct symtab *t)
{
	uint32_t g;

	pthread_mutex_lock(&t->lock);
	g = t->gen;
	pthread_mutex_unlock(&t->lock);
	return g;
}

/* The walk, cut where `keep` says, and with `mark` the program's frames
 * marked in out. */
static enum symtab_unwind_rc
symtab_walk(struct symtab *t, pid_t pid, const struct unwinder_regs *regs,
	    unwinder_read_fn read, void *ctx, uint64_t *frames, size_t max,
	    bool wait, bool mark, const struct symtab_keep *keep,
	    struct symtab_unwound *out)
{
	struct symbolizer *s;
	struct symbol sym;

	out->n = 0;
	out->where = out->entry = -1;
	out->inlined[0] = '\0';
	out->inlined_at = -1;
	if (wait)
		pthread_mutex_lock(&t->lock);
	else if (pthread_mutex_trylock(&t->lock))
		return SYMTAB_UNWIND_BUSY;
	s = !pid || pid == t->pid ? symtab_get(t)
	    : t->recorded	  ? NULL
				  : symtab_get_other(t, pid);
	if (!s) {
		pthread_mutex_unlock(&t->lock);
		return SYMTAB_UNWIND_NONE;
	}
	out->n = symbolizer_unwind(s, regs, read, ctx, frames, max);
	if (keep && keep->fn)
		out->n = keep->fn(keep->ctx, frames, out->n);
	for (size_t i = 0; mark && i < out->n; i++) {
		/* Every frame is a return address: name its call. */
		bool known = symbolizer_lookup(s, frames[i] - 1, &sym);
		enum framekind_module kind = !symbolizer_has_program(s)
						     ? FRAMEKIND_NAMED
					     : sym.program ? FRAMEKIND_PROGRAM
							   : FRAMEKIND_LIBRARY;

		if (known && framekind_runtime(t->kind, sym.module,
					       sym.function, kind)) {
			if (out->where < 0 && out->inlined_at < 0 &&
			    framekind_inlined(sym.function, out->inlined,
					      sizeof(out->inlined)))
				out->inlined_at = (int)i;
			continue;
		}
		if (out->where < 0)
			out->where = (int)i;
		out->entry = (int)i;
	}
	if (out->where >= 0) {
		out->inlined[0] = '\0';
		out->inlined_at = -1;
	}
	pthread_mutex_unlock(&t->lock);
	return SYMTAB_UNWIND_DONE;
}

enum symtab_unwind_rc symtab_unwind(struct symtab *t,
				    const struct unwinder_regs *regs,
				    unwinder_read_fn read, void *ctx,
				    uint64_t *frames, size_t max, bool wait,
				    struct symtab_unwound *out)
{
	return symtab_walk(t, 0, regs, read, ctx, frames, max, wait, true, NULL,
			   out);
}

enum symtab_unwind_rc symtab_unwind_in(struct symtab *t, pid_t pid,
				       const struct unwinder_regs *regs,
				       unwinder_read_fn read, void *ctx,
				       uint64_t *frames, size_t max, bool wait,
				       const struct symtab_keep *keep,
				       struct symtab_unwound *out)
{
	return symtab_walk(t, pid, regs, read, ctx, frames, max, wait, true,
			   keep, out);
}

enum symtab_unwind_rc symtab_unwind_frames(struct symtab *t,
					   const struct unwinder_regs *regs,
					   unwinder_read_fn read, void *ctx,
					   uint64_t *frames, size_t max,
					   bool wait, size_t *n)
{
	struct symtab_unwound out;
	enum symtab_unwind_rc rc = symtab_walk(t, 0, regs, read, ctx, frames,
					       max, wait, false, NULL, &out);

	*n = out.n;
	return rc;
}
