/*
 * replay_ctl: time controls of the TUI while replaying (--replay): actions,
 * the go-to line's time syntax, the header's position line.  See
 * replay_ctl.c.
 */
#ifndef COROTOP_REPLAY_CTL_H
#define COROTOP_REPLAY_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/tui/keymap.h"

struct tui;

/* text as a moment of the recording [t0, t1] (pos: the position, for
 * +/- times), clamped; "end" is `ran`, the last moment the program still
 * ran (engine_replay_info).  False with a message for people. */
bool replay_ctl_parse(const char *text, uint64_t pos, uint64_t t0, uint64_t t1,
		      uint64_t ran, uint64_t *out, char *err, size_t errlen);
/* ns as "m:ss.mmm" (or "h:mm:ss.mmm"). */
void replay_ctl_format(uint64_t ns, char *buf, size_t n);

/* A replay action; returns reactions (enum tui_reaction). */
unsigned replay_ctl_action(struct tui *t, enum tui_action a);
/* The go-to line was entered. */
unsigned replay_ctl_goto(struct tui *t, const char *text);
/* Header line y while replaying; returns the column after it. */
int replay_ctl_header(struct tui *t, int y);

#endif
