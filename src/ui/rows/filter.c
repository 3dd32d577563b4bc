/*
 * filter: the table filter language.
 *
 *   text           rows with a name cell that contains "text"
 *                  (case-insensitive); text with a space in it ("conn
 *                  wait") is looked for in the name cells joined by spaces
 *   !regex         rows with a name cell that matches the POSIX extended
 *                  regex (case-insensitive), so "!^42$" is thread 42
 *   key=value ...  field terms: the cell of column `key` contains value
 *                  (case-insensitive), as htop's filter does, so
 *                  "name=worker" keeps worker-1 and worker-2; key==value
 *                  is the whole cell.  Numbers compare whole either way
 *                  (tid=42 is thread 42, not 420); state accepts R/S/D or
 *                  the word, id and where accept an optional 0x.  Terms
 *                  and a remaining substring combine with AND:
 *                  "state=S tid=42 conn".
 *
 * The name cells are the ones that say which coroutine a row is and where
 * it is: ID, TID, NAME, WHERE and WARN.  Numbers that move with time (AGE,
 * SW/s, ...) are not text to search in; field terms reach every column.
 *
 * Keys are column names (column.c), so every column is filterable.  Terms on
 * integer columns compare numbers, not text.
 *
 * Before any filter, a live table's rows leave out the coroutines just made:
 * no transition harvested yet and younger than unswitched_ns (filter.h).
 * A program that makes a thousand fibers at start would otherwise paint a
 * first screen of rows whose TID and WHERE read "-" (a record opened from
 * its station before its first switch was harvested); htop shows a process
 * once it has values, not before.  A coroutine that stays unswitched past
 * that age never ran, and its row says so with "-"; a dead one is shown.
 *
 * Speed.  filter_select runs over every coroutine on every refresh, 100k of
 * them, and on a busy program every record changes between two refreshes.
 * A cell-by-cell match (regex, or text without a space) therefore remembers
 * each cell's result by the value the cell shows (matchcache.c): TID by
 * thread, WHERE by address, WARN by mask, NAME by name id, and ID per
 * record slot.  A record
 * that changed thread and state formats nothing new; only values never seen
 * under this filter (and these symbols) are formatted and matched.  A
 * joined-text match (text with a space) is memoised per record slot: valid
 * while the record shows the same name cells.
 */
#define _GNU_SOURCE /* memmem */
#include "ui/rows/filter.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/model/lint.h"
#include "ui/rows/column.h"
#include "ui/rows/matchcache.h"

/* Distinct thread ids the TID cache is sized for; more only cost misses. */
#define FILTER_TID_CACHE 4096u
/* Distinct names the NAME cache is sized for; more only cost misses. */
#define FILTER_NAME_CACHE 4096u
/* How many rows ahead filter_select prefetches address-cache buckets. */
#define FILTER_PREFETCH 16u

void filter_init(struct filter *f)
{
	memset(f, 0, sizeof(*f));
	matchcache_init(&f->tid_cache);
	matchcache_init(&f->addr_cache);
	matchcache_init(&f->warn_cache);
	matchcache_init(&f->name_cache);
}

void filter_finish(struct filter *f)
{
	if (f->regex_on)
		regfree(&f->regex);
	free(f->memo);
	matchcache_finish(&f->tid_cache);
	matchcache_finish(&f->addr_cache);
	matchcache_finish(&f->warn_cache);
	matchcache_finish(&f->name_cache);
	memset(f, 0, sizeof(*f));
}

/* Integer columns whose field terms compare numbers; `hex` for the ones
 * shown in hex. */
static bool filter_numeric(int column, bool *hex)
{
	*hex = column == COL_ID || column == COL_WHERE;
	return column == COL_ID || column == COL_PID || column == COL_TID ||
	       column == COL_SWITCHES || column == COL_SEQ ||
	       column == COL_LOST || column == COL_WHERE;
}

/* The term's value as a number of its column, when it is one. */
static void filter_parse_term(struct filter_term *t)
{
	const char *v = t->value;
	char *end;
	bool hex;

	t->numeric = false;
	if (!filter_numeric(t->column, &hex))
		return;
	if (hex && v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
		v += 2;
	if (!*v || *v == '-' || *v == '+' || *v == ' ')
		return;
	errno = 0;
	t->num = strtoull(v, &end, hex ? 16 : 10);
	t->numeric = !*end && !errno;
}

/* ASCII only, as the cells are; returns the length. */
static size_t filter_lower(char *s)
{
	char *p = s;

	for (; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return (size_t)(p - s);
}

/* f becomes nf.  The memo's and the caches' memory is kept, their results
 * are not: the generations move on (the memo's skips 0, which marks
 * never-computed entries). */
static void filter_adopt(struct filter *f, struct filter *nf)
{
	struct matchcache *mine[] = {&f->tid_cache, &f->addr_cache,
				     &f->warn_cache, &f->name_cache};
	struct matchcache *theirs[] = {&nf->tid_cache, &nf->addr_cache,
				       &nf->warn_cache, &nf->name_cache};

	nf->memo = f->memo;
	nf->memo_cap = f->memo_cap;
	nf->memo_gen = f->memo_gen + 1 ? f->memo_gen + 1 : 1;
	nf->memo_symgen = f->memo_symgen;
	nf->unswitched_ns = f->unswitched_ns; /* the table's, not the text's */
	f->memo = NULL;
	for (size_t k = 0; k < sizeof(mine) / sizeof(mine[0]); k++) {
		matchcache_finish(theirs[k]);
		*theirs[k] = *mine[k];
		matchcache_reset(theirs[k]);
		matchcache_init(mine[k]);
	}
	nf->by_cell =
		nf->regex_on || (nf->substr[0] && !strchr(nf->substr, ' '));
	filter_finish(f);
	*f = *nf;
}

bool filter_set(struct filter *f, const char *text, char *err, size_t n)
{
	struct filter nf;
	char buf[128], *save = NULL, *tok;
	size_t used = 0;
	int rc;

	filter_init(&nf);
	snprintf(nf.text, sizeof(nf.text), "%s", text);
	if (!*text) {
		filter_adopt(f, &nf);
		return true;
	}

	nf.active = true;
	if (text[0] == '!') {
		rc = regcomp(&nf.regex, text + 1,
			     REG_EXTENDED | REG_ICASE | REG_NOSUB);
		if (rc) {
			char why[96];

			regerror(rc, &nf.regex, why, sizeof(why));
			snprintf(err, n, "bad regex '%s': %s", text + 1, why);
			return false;
		}
		nf.regex_on = true;
		filter_adopt(f, &nf);
		return true;
	}
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(tok, '=');

		if (eq && eq != tok) {
			int col;

			*eq = '\0';
			col = column_find(tok);
			if (col < 0) {
				snprintf(err, n,
					 "no column '%s' (try state=, tid=, "
					 "id=, where=)",
					 tok);
				return false;
			}
			if (nf.nterms == FILTER_MAX_TERMS) {
				snprintf(err, n, "at most %d field terms",
					 FILTER_MAX_TERMS);
				return false;
			}
			nf.terms[nf.nterms].column = col;
			nf.terms[nf.nterms].exact = eq[1] == '=';
			snprintf(nf.terms[nf.nterms].value,
				 sizeof(nf.terms[0].value), "%s",
				 eq + 1 + (eq[1] == '='));
			filter_parse_term(&nf.terms[nf.nterms]);
			nf.nterms++;
			continue;
		}
		used += (size_t)snprintf(nf.substr + used,
					 sizeof(nf.substr) - used, "%s%s",
					 used ? " " : "", tok);
		if (used >= sizeof(nf.substr))
			used = sizeof(nf.substr) - 1;
	}
	filter_lower(nf.substr);
	filter_adopt(f, &nf);
	return true;
}

static const char *filter_strip_0x(const char *v)
{
	return (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) ? v + 2 : v;
}

static bool filter_term_match(const struct filter_term *t,
			      const struct snapshot *s,
			      const struct model_coro *c)
{
	char cell[96];

	if (t->column == COL_STATE)
		return toupper((unsigned char)t->value[0]) == c->state;
	if (t->numeric) {
		switch (t->column) {
		case COL_ID:
			return c->probe_id == t->num;
		case COL_PID:
			return column_table[COL_PID].key(s, c) == t->num;
		case COL_TID:
			return c->last_tid && c->last_tid == t->num;
		case COL_SWITCHES:
			return c->switches == t->num;
		case COL_SEQ:
			return c->last_seq == t->num;
		case COL_LOST:
			return c->lost == t->num;
		case COL_WHERE:
			return c->last_addr == t->num;
		}
	}
	column_table[t->column].cell(cell, sizeof(cell), s, c);
	if (!t->exact)
		return strcasestr(cell, t->value) != NULL;
	if (t->column == COL_ID || t->column == COL_WHERE)
		return !strcasecmp(filter_strip_0x(cell),
				   filter_strip_0x(t->value));
	return !strcasecmp(cell, t->value);
}

/* The name cells, space-separated and lowercased; an empty cell (no
 * name) adds no blank. */
static const int filter_name_cells[] = {COL_ID, COL_TID, COL_NAME, COL_WHERE,
					COL_WARN};

static size_t filter_row_text(char *buf, size_t n, const struct snapshot *s,
			      const struct model_coro *c)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t k = 0;
	     k < sizeof(filter_name_cells) / sizeof(filter_name_cells[0]) &&
	     used + 2 < n;
	     k++) {
		size_t at = used && used + 1 < n ? used + 1 : used, len;

		column_table[filter_name_cells[k]].cell(buf + at, n - at, s, c);
		len = filter_lower(buf + at);
		if (!len) {
			buf[used] = '\0';
			continue;
		}
		if (at > used)
			buf[used] = ' ';
		used = at + len;
	}
	return used;
}

bool filter_row_contains(const struct snapshot *s, const struct model_coro *c,
			 const char *needle)
{
	char row[256];
	size_t len;

	if (!*needle)
		return true;
	len = filter_row_text(row, sizeof(row), s, c);
	return memmem(row, len, needle, strlen(needle)) != NULL;
}

/* One cell's text against the text part of the filter; lowercases it. */
static bool filter_cell_text(const struct filter *f, char *cell)
{
	if (f->regex_on)
		return regexec(&f->regex, cell, 0, NULL, 0) == 0;
	filter_lower(cell);
	return strstr(cell, f->substr) != NULL;
}

static bool filter_cell(const struct filter *f, const struct snapshot *s,
			const struct model_coro *c, int column)
{
	char cell[256];

	column_table[column].cell(cell, sizeof(cell), s, c);
	return filter_cell_text(f, cell);
}

/* The value a name cell shows, which is what its cache is keyed by. */
static uint64_t filter_tid_key(const struct model_coro *c)
{
	return c->last_tid ? c->last_tid : UINT64_MAX; /* "-" */
}

/* The text part of the filter (regex or substring), without the memo. */
static bool filter_text_match(const struct filter *f, const struct snapshot *s,
			      const struct model_coro *c)
{
	if (f->by_cell) { /* every regex, and text without a space */
		for (size_t k = 0; k < sizeof(filter_name_cells) /
					       sizeof(filter_name_cells[0]);
		     k++)
			if (filter_cell(f, s, c, filter_name_cells[k]))
				return true;
		return false;
	}
	return filter_row_contains(s, c, f->substr);
}

bool filter_match(const struct filter *f, const struct snapshot *s,
		  const struct model_coro *c)
{
	if (!f->active)
		return true;
	for (unsigned i = 0; i < f->nterms; i++)
		if (!filter_term_match(&f->terms[i], s, c))
			return false;
	return filter_text_match(f, s, c);
}

/* A cell's result from its cache, computed and stored on a miss. */
static bool filter_cached(struct filter *f, struct matchcache *mc, uint64_t key,
			  const struct snapshot *s, const struct model_coro *c,
			  int column)
{
	int r = matchcache_get(mc, key);

	if (r < 0) {
		r = filter_cell(f, s, c, column);
		matchcache_put(mc, key, r);
	}
	return r;
}

/* The WHERE cell's result by address; kept only when the cell's text is
 * settled (a name not come yet shows in hex for now: asked again). */
static bool filter_where(struct filter *f, const struct snapshot *s,
			 const struct model_coro *c)
{
	int r = matchcache_get(&f->addr_cache, c->last_addr);
	char cell[256];
	bool settled;

	if (r >= 0)
		return r;
	snapshot_where_of_settled(s, c, c->last_addr, true, cell, sizeof(cell),
				  &settled);
	r = filter_cell_text(f, cell);
	if (settled)
		matchcache_put(&f->addr_cache, c->last_addr, r);
	return r;
}

/* The NAME cell's result by name id; kept only when the name is settled
 * (one from an entry's address may still come). */
static bool filter_name(struct filter *f, const struct snapshot *s,
			const struct model_coro *c)
{
	int r = matchcache_get(&f->name_cache, c->name);
	char cell[256];
	bool settled;

	if (r >= 0)
		return r;
	snapshot_name_settled(s, c, cell, sizeof(cell), &settled);
	r = filter_cell_text(f, cell);
	if (settled)
		matchcache_put(&f->name_cache, c->name, r);
	return r;
}

/* Cell by cell, cheapest first; the ID cell's result is kept per slot. */
static bool filter_by_cell(struct filter *f, const struct snapshot *s,
			   const struct model_coro *c, bool memo)
{
	struct filter_memo *m;

	if (filter_cached(f, &f->warn_cache, c->warn, s, c, COL_WARN) ||
	    filter_cached(f, &f->tid_cache, filter_tid_key(c), s, c, COL_TID) ||
	    filter_name(f, s, c))
		return true;
	if (memo && c->slot < f->memo_cap) {
		m = &f->memo[c->slot];
		if (m->gen != f->memo_gen || m->id != c->id)
			*m = (struct filter_memo){
				.id = c->id,
				.gen = f->memo_gen,
				.match = filter_cell(f, s, c, COL_ID),
			};
		if (m->match)
			return true;
	} else if (filter_cell(f, s, c, COL_ID)) {
		return true;
	}
	return filter_where(f, s, c);
}

/* What the joined name cells depend on, besides the record's identity. */
static bool filter_memo_valid(const struct filter *f,
			      const struct filter_memo *m,
			      const struct model_coro *c)
{
	return m->gen == f->memo_gen && m->id == c->id &&
	       m->tid == filter_tid_key(c) && m->addr == c->last_addr &&
	       m->warn == c->warn && m->name == c->name;
}

/* The joined text, memoised per slot. */
static bool filter_by_row(struct filter *f, const struct snapshot *s,
			  const struct model_coro *c, bool memo)
{
	struct filter_memo *m;

	if (!memo || c->slot >= f->memo_cap)
		return filter_text_match(f, s, c);
	m = &f->memo[c->slot];
	if (!filter_memo_valid(f, m, c)) {
		char where[8];
		bool settled;

		*m = (struct filter_memo){
			.id = c->id,
			.tid = filter_tid_key(c),
			.addr = c->last_addr,
			.warn = c->warn,
			.name = c->name,
			.gen = f->memo_gen,
			.match = filter_text_match(f, s, c),
		};
		/* A WHERE or NAME not named yet: not kept (gen 0 is never
		 * current). */
		snapshot_where_of_settled(s, c, c->last_addr, true, where,
					  sizeof(where), &settled);
		if (settled)
			snapshot_name_settled(s, c, where, sizeof(where),
					      &settled);
		if (!settled)
			m->gen = 0;
	}
	return m->match;
}

static bool filter_memo_grow(struct filter *f, size_t need)
{
	struct filter_memo *m;

	if (need <= f->memo_cap)
		return true;
	m = realloc(f->memo, need * sizeof(*m));
	if (!m)
		return false;
	/* gen 0 is never current (filter_set starts at 1). */
	memset(m + f->memo_cap, 0, (need - f->memo_cap) * sizeof(*m));
	f->memo = m;
	f->memo_cap = need;
	return true;
}

/* Memory for the memo and the caches; the caches' results go when names
 * given earlier may have changed (every WHERE cell may read differently).
 * A name arriving for an address shown in hex changes nothing kept:
 * results from unsettled WHERE cells are never kept. */
static bool filter_prepare(struct filter *f, const struct snapshot *s)
{
	bool memo = filter_memo_grow(f, s->cap);

	if (s->names_gen != f->memo_symgen) {
		f->memo_symgen = s->names_gen;
		f->memo_gen = f->memo_gen + 1 ? f->memo_gen + 1 : 1;
		matchcache_reset(&f->addr_cache);
		matchcache_reset(&f->name_cache);
	}
	if (f->by_cell) {
		/* This refresh's addresses and the last one's: a coroutine
		 * that parks at two places in turn keeps both. */
		matchcache_reserve(&f->addr_cache, 2 * s->count);
		matchcache_reserve(&f->tid_cache, FILTER_TID_CACHE);
		matchcache_reserve(&f->warn_cache, 1u << LINT_COUNT);
		matchcache_reserve(&f->name_cache, FILTER_NAME_CACHE);
	}
	return memo;
}

/* Made just now: no transition harvested yet (TID "-"), alive, and
 * younger than the table waits for one. */
static bool filter_just_made(const struct filter *f, const struct snapshot *s,
			     const struct model_coro *c)
{
	return f->unswitched_ns && !c->last_tid && !c->scanned &&
	       c->state != MODEL_DEAD &&
	       snapshot_age_ns(s, c) < f->unswitched_ns;
}

size_t filter_select(struct filter *f, const struct snapshot *s, uint32_t *idx)
{
	bool text = f->regex_on || f->substr[0];
	bool memo = f->active && text && filter_prepare(f, s);
	size_t n = 0;

	f->held = 0;
	for (size_t i = 0; i < s->count; i++) {
		const struct model_coro *c = &s->coro[i];
		bool ok = true;

		if (filter_just_made(f, s, c)) {
			f->held++;
			continue;
		}

		/* The address cache is megabytes and its buckets are random:
		 * ask for a later row's bucket now (hides most of the misses
		 * when every record changed). */
		if (memo && f->by_cell && i + FILTER_PREFETCH < s->count)
			matchcache_prefetch(
				&f->addr_cache,
				s->coro[i + FILTER_PREFETCH].last_addr);
		if (f->active) {
			for (unsigned k = 0; k < f->nterms && ok; k++)
				ok = filter_term_match(&f->terms[k], s, c);
			if (ok && text)
				ok = f->by_cell ? filter_by_cell(f, s, c, memo)
						: filter_by_row(f, s, c, memo);
		}
		if (ok)
			idx[n++] = (uint32_t)i;
	}
	return n;
}
