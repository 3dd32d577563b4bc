/*
 * keys: what a key asks of a view's loop, and reading every key that is
 * waiting.  Both interactive views' actions return these reaction bits
 * and never draw; one place per loop pass turns them into work.  See
 * keys.c.
 */
#ifndef COROTOP_TERM_KEYS_H
#define COROTOP_TERM_KEYS_H

/* Reactions: what an action or a watcher asks the loop to do. */
enum term_reaction {
	TERM_REDRAW = 1 << 0,  /* draw the screen again */
	TERM_REBUILD = 1 << 1, /* the rows again (filter, sort) */
	TERM_REFRESH = 1 << 2, /* a new snapshot now (not while paused) */
	TERM_QUIT = 1 << 3,
};

/* The view's side of term_keys_drain. */
struct term_keys {
	/* One key's reactions. */
	unsigned (*key)(void *ctx, int key);
	/* The rows again, now (TERM_REBUILD). */
	void (*rebuild)(void *ctx);
};

/* Every key waiting (getch until ERR, so that the rest of an escape
 * sequence never waits for the next pass), each given to k->key.  When a
 * key asks for TERM_REBUILD the rows are rebuilt before the next key, so
 * that it acts on them (t then g, say); drawing still waits.  Returns
 * dirty with the reactions of the keys added, TERM_REBUILD done and turned
 * into TERM_REDRAW. */
unsigned term_keys_drain(const struct term_keys *k, void *ctx, unsigned dirty);

#endif
