/*
 * convert_cmd: corotop convert --to chrome|jsonl|folded|speedscope|heph FILE
 * [-o OUT].
 *
 * The trace is indexed (hephfile.c) and written in the chosen format to
 * OUT, or to standard output without -o (or with -o -).  OUT is written
 * atomically: into a temporary file beside it, renamed over it once
 * complete, so a failed conversion never leaves half a file.  The result
 * keeps an existing OUT's mode and owner (a new one gets 0666 less the
 * umask).  OUT may not be a symbolic link, nor the trace itself (exit 2).
 * Problems in the trace -- a truncated or lying packet -- are reported on
 * stderr with their byte offsets; what could be read is still converted.  A
 * summary line goes to stderr as well, so that stdout carries only the output.
 * --to heph writes the trace's plain Heph bytes (a compressed recording,
 * FILE.zst, decompressed) for tools that read Heph but not zstd.
 */
#define _GNU_SOURCE
#include "ui/convert_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tmpbeside.h"
#include "convert/convert.h"

static const char convert_usage[] =
	"usage: corotop convert --to FORMAT FILE [-o OUT]\n"
	"\n"
	"Rewrite a Heph trace (corotop --record, or any Heph writer's) for "
	"other tools.\n"
	"\n"
	"  -t, --to FORMAT      chrome, jsonl, folded, speedscope or heph (see "
	"below)\n"
	"  -o, --output OUT     write OUT (atomically); default or '-': "
	"standard output\n"
	"  -q, --quiet          no summary line on stderr\n"
	"  -h, --help           this help\n"
	"\n"
	"Formats:\n";

static void convert_help(FILE *f)
{
	fputs(convert_usage, f);
	for (size_t i = 0; i < convert_nformats; i++)
		fprintf(f, "  %-10s %s\n", convert_formats[i].name,
			convert_formats[i].what);
	fprintf(f, "  %-10s %s\n", "heph",
		"plain Heph (a compressed recording, FILE.zst, decompressed)");
}

static int convert_usage_error(const char *what, const char *arg)
{
	fprintf(stderr,
		"corotop convert: %s%s%s; see 'corotop convert "
		"--help'\n",
		what, arg ? " " : "", arg ? arg : "");
	return 2;
}

/* -o OUT before anything is read: not a symbolic link (it would be
 * replaced, not written through), and not the trace itself (renamed over,
 * the trace would be gone).  2 (usage) with a message, or 0. */
static int convert_check_out(const char *in, const char *out_path)
{
	struct stat is, os;

	if (lstat(out_path, &os) < 0)
		return 0; /* a new file */
	if (S_ISLNK(os.st_mode)) {
		fprintf(stderr,
			"corotop convert: -o %s is a symbolic link; give the "
			"file it points to\n",
			out_path);
		return 2;
	}
	if (!stat(in, &is) && is.st_dev == os.st_dev &&
	    is.st_ino == os.st_ino) {
		fprintf(stderr,
			"corotop convert: -o %s is the trace being converted; "
			"give another file\n",
			out_path);
		return 2;
	}
	return 0;
}

/* Open a temporary file beside path with the mode (and owner) the result
 * should have: an existing file's, or 0666 less the umask for a new one. */
static FILE *convert_tmp(const char *path, char *tmp, size_t n)
{
	struct stat old;
	mode_t mask;
	char *name;
	int fd;
	FILE *f;

	fd = tmp_beside(path, &name);
	if (fd < 0)
		return NULL;
	/* Kept in the caller's buffer: a SIGBUS longjmp unlinks it. */
	if (strlen(name) >= n) {
		close(fd);
		unlink(name);
		free(name);
		errno = ENAMETOOLONG;
		return NULL;
	}
	memcpy(tmp, name, strlen(name) + 1);
	free(name);
	if (!stat(path, &old) && S_ISREG(old.st_mode)) {
		/* The owner first: chown clears set-id bits. */
		if (fchown(fd, old.st_uid, old.st_gid) < 0 && errno != EPERM)
			goto fail;
		if (fchmod(fd, old.st_mode & 07777) < 0)
			goto fail;
	} else {
		mask = umask(0);
		umask(mask);
		if (fchmod(fd, 0666 & ~mask) < 0)
			goto fail;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
	}
	return f;
fail:
	close(fd);
	unlink(tmp);
	return NULL;
}

/* The trace is mapped: a file that shrinks under us faults (SIGBUS).  The
 * conversion is abandoned with a message, not a crash. */
static sigjmp_buf convert_jb;

static void convert_sigbus(int sig)
{
	(void)sig;
	siglongjmp(convert_jb, 1);
}

/* A packet the trace could not read, said on stderr. */
static void convert_problem(void *ctx, uint64_t off, const char *what)
{
	fprintf(stderr, "corotop convert: %s: at byte %" PRIu64 ": %s\n",
		(const char *)ctx, off, what);
}

/* Where a conversion writes: standard output, OUT itself (a device or a
 * FIFO, -o /dev/null, is written to, never replaced by a file renamed
 * over it), or a temporary file beside OUT renamed over it at the end.
 * Static, so a SIGBUS longjmp finds it as it was. */
static struct {
	FILE *f;
	const char *path; /* NULL: standard output */
	bool direct;	  /* f is path itself */
	char tmp[4096];
} convert_out;

/* Open out_path (NULL or "-": standard output); false, said, on failure. */
static bool convert_out_open(const char *out_path)
{
	struct stat ost;

	convert_out.f = stdout;
	convert_out.path = NULL;
	convert_out.direct = false;
	if (!out_path || !strcmp(out_path, "-"))
		return true;
	convert_out.path = out_path;
	convert_out.direct = !stat(out_path, &ost) && !S_ISREG(ost.st_mode);
	convert_out.f = convert_out.direct
				? fopen(out_path, "w")
				: convert_tmp(out_path, convert_out.tmp,
					      sizeof(convert_out.tmp));
	if (convert_out.f)
		return true;
	fprintf(stderr, "corotop convert: cannot write %s: %s\n", out_path,
		strerror(errno));
	convert_out.f = stdout; /* nothing to close */
	return false;
}

/* Close it: rename the temporary file over OUT when ok, else remove it.
 * Returns ok, false with err set when closing or renaming fails. */
static bool convert_out_close(bool ok, char *err, size_t errlen)
{
	if (convert_out.f == stdout) {
		if (fflush(stdout) && ok) {
			snprintf(err, errlen, "writing: %s", strerror(errno));
			ok = false;
		}
		return ok;
	}
	if (fclose(convert_out.f) && ok) {
		snprintf(err, errlen, "closing: %s", strerror(errno));
		ok = false;
	}
	convert_out.f = stdout;
	if (ok && !convert_out.direct &&
	    rename(convert_out.tmp, convert_out.path)) {
		snprintf(err, errlen, "renaming %.200s: %s", convert_out.tmp,
			 strerror(errno));
		ok = false;
	}
	if (!ok && !convert_out.direct)
		unlink(convert_out.tmp);
	return ok;
}

/* The trace shrank under us (SIGBUS): nothing is written. */
static int convert_out_abandon(const char *in)
{
	fprintf(stderr,
		"corotop convert: %s changed size while being read (SIGBUS); "
		"nothing written\n",
		in);
	if (convert_out.f != stdout) {
		fclose(convert_out.f);
		if (!convert_out.direct)
			unlink(convert_out.tmp);
	}
	convert_out.f = stdout;
	return 1;
}

static const char *convert_out_name(void)
{
	return convert_out.path ? convert_out.path : "stdout";
}

/* --to heph: the plain Heph bytes of `in` to out_path (NULL or "-":
 * stdout), atomically as convert_run writes: the exit status. */
static int convert_run_heph(const char *in, const char *out_path, bool quiet)
{
	uint64_t bytes = 0;
	size_t problems = 0;
	char err[512];
	bool ok;

	if (out_path && strcmp(out_path, "-")) {
		int rc = convert_check_out(in, out_path);

		if (rc)
			return rc;
	}
	if (!convert_out_open(out_path))
		return 1;
	if (sigsetjmp(convert_jb, 1))
		return convert_out_abandon(in);
	signal(SIGBUS, convert_sigbus);
	ok = convert_heph(in, convert_out.f, convert_problem, (void *)in,
			  &bytes, &problems, err, sizeof(err));
	ok = convert_out_close(ok, err, sizeof(err));
	if (!ok)
		fprintf(stderr, "corotop convert: %s: %s\n", convert_out_name(),
			err);
	else if (!quiet)
		fprintf(stderr,
			"corotop convert: %" PRIu64
			" bytes of Heph written to %s (%zu problems)\n",
			bytes, convert_out_name(), problems);
	return ok ? 0 : 1;
}

/* Convert `in` to out_path (NULL or "-": stdout): the exit status. */
static int convert_run(const char *in, const struct convert_format *fmt,
		       const char *out_path, bool quiet)
{
	struct convert_result res;
	struct convert *c;
	char err[512], sum[200];
	bool ok;

	if (out_path && strcmp(out_path, "-")) {
		int rc = convert_check_out(in, out_path);

		if (rc)
			return rc;
	}
	convert_out.f = stdout;
	/* (c is left as the fault found it: freeing it could touch the
	 * mapping again; the process ends here.) */
	if (sigsetjmp(convert_jb, 1))
		return convert_out_abandon(in);
	signal(SIGBUS, convert_sigbus);
	c = convert_create(in, fmt->to, convert_problem, (void *)in, &res, err,
			   sizeof(err));
	if (!c) {
		fprintf(stderr, "corotop convert: %s\n", err);
		return 1;
	}
	if (res.problems > res.told)
		fprintf(stderr, "corotop convert: %s: %zu more problems\n", in,
			res.problems - res.told);
	if (!convert_out_open(out_path)) {
		convert_destroy(c);
		return 1;
	}
	ok = convert_write_to(c, convert_out.f, &res, err, sizeof(err));
	/* Parked stacks of a recording that holds none: say so, rather
	 * than leave an empty profile that looks like a result. */
	if (ok &&
	    (fmt->to == CONVERT_FOLDED || fmt->to == CONVERT_SPEEDSCOPE) &&
	    res.st.written == 0) {
		snprintf(err, sizeof(err),
			 "%.300s holds no parked stacks to fold (record with "
			 "--parked-stacks); nothing written",
			 in);
		ok = false;
	}
	ok = convert_out_close(ok, err, sizeof(err));
	if (!ok)
		fprintf(stderr, "corotop convert: %s: %s\n", convert_out_name(),
			err);
	else if (!quiet)
		/* The counts chrome and jsonl share (convert_summary) first,
		 * so the two summaries of one file start with the same text. */
		fprintf(stderr,
			"corotop convert: %s; %" PRIu64
			" %s written to %s (%" PRIu64 " nudged, %" PRIu64
			" skipped, %zu problems)\n",
			convert_summary(&res.st, sum, sizeof(sum)),
			res.st.written,
			fmt->to == CONVERT_CHROME  ? "trace events"
			: fmt->to == CONVERT_JSONL ? "lines"
						   : "stacks",
			convert_out_name(), res.st.nudged, res.st.skipped,
			res.problems);
	convert_destroy(c);
	return ok ? 0 : 1;
}

int convert_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"to", required_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const struct convert_format *fmt = NULL;
	const char *out_path = NULL;
	bool quiet = false, heph = false;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			fmt = NULL;
			heph = !strcmp(optarg, "heph");
			for (size_t i = 0; i < convert_nformats; i++)
				if (!strcmp(optarg, convert_formats[i].name))
					fmt = &convert_formats[i];
			if (!fmt && !heph)
				return convert_usage_error(
					"--to expects chrome, jsonl, folded, "
					"speedscope or heph, got",
					optarg);
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			convert_help(stdout);
			return 0;
		case ':':
			return convert_usage_error("an option needs a value:",
						   argv[optind - 1]);
		default:
			return convert_usage_error("unknown option",
						   argv[optind - 1]);
		}
	}
	if (!fmt && !heph)
		return convert_usage_error("give the format: --to chrome, "
					   "jsonl, folded, speedscope or heph",
					   NULL);
	if (optind != argc - 1)
		return convert_usage_error(
			optind >= argc ? "give one trace FILE"
				       : "one trace FILE only, got "
					 "more:",
			optind >= argc ? NULL : argv[optind + 1]);
	if (heph)
		return convert_run_heph(argv[optind], out_path, quiet);
	return convert_run(argv[optind], fmt, out_path, quiet);
}
