/*
 * replay_ctl: the TUI's time controls while replaying a recording
 * (corotop --replay): the replay keys' actions, the "go to" line's time
 * syntax, and the header line that says where in the recording we are.
 *
 * Times are relative to the recording's first moment:
 *   12.5 or 12.5s     seconds        1:30 or 1:02:03   [h:]m:s
 *   250ms, 40us, 9ns  other units    +5s / -2.5s       from the position
 *   50%               of the length  start, end        the two ends
 *
 * The end is the last moment the program still ran: a recording goes on
 * to corotop's stop, past the deaths of the program's end (a kill, its
 * exit), where every coroutine is dead.  Playing and stepping go there.
 */
#define _GNU_SOURCE
#include "ui/tui/replay_ctl.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ui/tui/tui.h"

/* A decimal number at *s, moved past; false when there is none. */
static bool rc_number(const char **s, double *out)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)**s) && **s != '.')
		return false;
	v = strtod(*s, &end);
	if (end == *s || !isfinite(v) || v < 0)
		return false;
	/* Decimal digits and a point only: strtod also reads hex ("0x10"),
	 * exponents and "nan(...)". */
	for (const char *p = *s; p < end; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return false;
	*s = end;
	*out = v;
	return true;
}

/* The word u at *s and then nothing but spaces: moved past u. */
static bool rc_word(const char **s, const char *u)
{
	size_t n = strlen(u);
	const char *p = *s + n;

	if (strncmp(*s, u, n))
		return false;
	while (*p == ' ')
		p++;
	if (*p)
		return false;
	*s += n;
	return true;
}

bool replay_ctl_parse(const char *text, uint64_t pos, uint64_t t0, uint64_t t1,
		      uint64_t ran, uint64_t *out, char *err, size_t errlen)
{
	const char *s = text;
	double v = 0, ns;
	int sign = 0;

	/* A position outside the recording counts from its nearest end. */
	if (pos < t0)
		pos = t0;
	if (pos > t1)
		pos = t1;
	while (*s == ' ')
		s++;
	if (rc_word(&s, "start") || rc_word(&s, "begin")) {
		*out = t0;
		return true;
	}
	if (rc_word(&s, "end")) {
		*out = ran >= t0 && ran <= t1 ? ran : t1;
		return true;
	}
	if (*s == '+' || *s == '-')
		sign = *s++ == '+' ? 1 : -1;
	if (!rc_number(&s, &v))
		goto bad;
	if (*s == ':') { /* [h:]m:s */
		double m = v, sec = 0;

		s++;
		if (!rc_number(&s, &sec))
			goto bad;
		if (*s == ':') {
			double h = m;

			m = sec;
			s++;
			if (!rc_number(&s, &sec))
				goto bad;
			m += h * 60;
		}
		ns = ((m * 60) + sec) * 1e9;
	} else if (*s == '%') {
		s++;
		if (v > 100)
			goto bad;
		ns = v / 100 * (double)(t1 - t0);
	} else if (rc_word(&s, "ms")) {
		ns = v * 1e6;
	} else if (rc_word(&s, "us")) {
		ns = v * 1e3;
	} else if (rc_word(&s, "ns")) {
		ns = v;
	} else if (rc_word(&s, "m") || rc_word(&s, "min")) {
		ns = v * 60e9;
	} else if (rc_word(&s, "h")) {
		ns = v * 3600e9;
	} else {
		if (*s == 's')
			s++;
		ns = v * 1e9;
	}
	while (*s == ' ')
		s++;
	if (*s || ns > 1e19)
		goto bad;
	/* The nanosecond meant: 1.001 * 1e9 is 1000999999.99..., and the
	 * conversion below cuts. */
	ns = floor(ns + 0.5);
	if (sign > 0)
		*out = (double)(t1 - pos) <= ns ? t1 : pos + (uint64_t)ns;
	else if (sign < 0)
		*out = (double)(pos - t0) <= ns ? t0 : pos - (uint64_t)ns;
	else
		*out = (double)(t1 - t0) <= ns ? t1 : t0 + (uint64_t)ns;
	return true;
bad:
	snprintf(err, errlen,
		 "'%s' is not a time (try 12.5s, 1:30, +5s, -2s, 50%%, start, "
		 "end)",
		 text);
	return false;
}

void replay_ctl_format(uint64_t ns, char *buf, size_t n)
{
	uint64_t ms = ns / 1000000u, s = ms / 1000;

	if (s >= 3600)
		snprintf(buf, n,
			 "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64 ".%03" PRIu64,
			 s / 3600, s / 60 % 60, s % 60, ms % 1000);
	else
		snprintf(buf, n, "%" PRIu64 ":%02" PRIu64 ".%03" PRIu64, s / 60,
			 s % 60, ms % 1000);
}

static unsigned rc_say(struct tui *t, const char *what)
{
	struct engine_replay_info ri;
	char at[32];

	engine_replay_info(t->engine, &ri);
	replay_ctl_format(ri.pos - ri.t0, at, sizeof(at));
	snprintf(t->message, sizeof(t->message), "%s: %s%03u", what, at,
		 (unsigned)((ri.pos - ri.t0) / 1000 % 1000));
	return REACT_REFRESH | REACT_REDRAW;
}

unsigned replay_ctl_action(struct tui *t, enum tui_action a)
{
	struct engine_replay_info ri;
	bool detail = tui_view(t)->follows; /* steps by its transitions */

	engine_replay_info(t->engine, &ri);
	switch (a) {
	case ACT_PLAY:
		engine_replay_play(t->engine, !ri.playing);
		return REACT_REFRESH | REACT_REDRAW;
	case ACT_STEP_BACK:
	case ACT_STEP_FWD:
		engine_replay_step(t->engine, detail ? t->selected_id : 0,
				   a == ACT_STEP_FWD ? 1 : -1);
		return rc_say(t, detail ? "its transition" : "transition");
	case ACT_FASTER:
	case ACT_SLOWER:
		engine_replay_speed(t->engine, a == ACT_FASTER ? ri.speed * 2
							       : ri.speed / 2);
		engine_replay_info(t->engine, &ri);
		snprintf(t->message, sizeof(t->message), "speed x%g", ri.speed);
		return REACT_REFRESH | REACT_REDRAW;
	case ACT_GOTO:
		t->input = INPUT_GOTO;
		t->line[0] = '\0';
		t->line_len = 0;
		return REACT_REDRAW;
	case ACT_REPLAY_START:
	case ACT_REPLAY_END:
		engine_replay_seek(t->engine,
				   a == ACT_REPLAY_START ? ri.t0 : ri.ran);
		return rc_say(t, a == ACT_REPLAY_START ? "start" : "end");
	default:
		return REACT_NONE;
	}
}

unsigned replay_ctl_goto(struct tui *t, const char *text)
{
	struct engine_replay_info ri;
	char err[160];
	uint64_t to;

	engine_replay_info(t->engine, &ri);
	if (!*text)
		return REACT_REDRAW;
	if (!replay_ctl_parse(text, ri.pos, ri.t0, ri.t1, ri.ran, &to, err,
			      sizeof(err))) {
		snprintf(t->message, sizeof(t->message), "%s", err);
		return REACT_REDRAW;
	}
	engine_replay_seek(t->engine, to);
	return rc_say(t, "at");
}

int replay_ctl_header(struct tui *t, int y)
{
	const struct snapshot *s = &t->snap;
	const struct snapshot_replay *r = &s->replay;
	static const char lead[] = " corotop  replay ";
	const char *name = t->replay_name, *paren = strstr(name, " (");
	char pos[32], len[32], wall[32] = "", tail[128];
	uint64_t span = r->t1 - r->t0, at = s->ts - r->t0;
	int x, width, fill, room, nlen = (int)strlen(name);

	replay_ctl_format(at, pos, sizeof(pos));
	if (!r->playing) /* stepping moves by microseconds: show them */
		snprintf(pos + strlen(pos), sizeof(pos) - strlen(pos), "%03u",
			 (unsigned)(at / 1000 % 1000));
	replay_ctl_format(span, len, sizeof(len));
	if (s->wall_ns) {
		time_t sec = (time_t)(s->wall_ns / 1000000000u);
		struct tm tm;

		if (localtime_r(&sec, &tm))
			strftime(wall, sizeof(wall), "  %H:%M:%S", &tm);
	}
	snprintf(tail, sizeof(tail), "  %s %s / %s  x%g%s",
		 r->playing ? ">" : "||", pos, len, r->speed, wall);
	/* Narrow: the name gives way (the command first, then the end of
	 * the file name, at a character's start), never the time. */
	room = t->cols - (int)(sizeof(lead) - 1) - (int)strlen(tail);
	if (nlen > room && paren)
		nlen = (int)(paren - name);
	if (nlen > room)
		nlen = room > 0 ? room : 0;
	while (nlen > 0 && ((unsigned char)name[nlen] & 0xc0) == 0x80)
		nlen--;
	x = term_text(y, 0, tui_attr(t, PAIR_HEADER), "%s%.*s%s", lead, nlen,
		      name, tail);
	/* A position bar in what is left of the line. */
	width = t->cols - x - 4;
	if (width < 10)
		return x;
	fill = span ? (int)((double)at / (double)span * width) : width;
	x = term_text(y, x + 2, tui_attr(t, PAIR_HEADER), "[");
	for (int i = 0; i < width; i++)
		x = term_text(y, x, tui_attr(t, PAIR_HEADER), "%c",
			      i < fill	  ? '='
			      : i == fill ? '|'
					  : '-');
	return term_text(y, x, tui_attr(t, PAIR_HEADER), "]");
}
