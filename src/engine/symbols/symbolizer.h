/*
 * symbolizer: addresses of a running target process as "function+0xoff" and,
 * when debug info exists, "file:line", through elfutils libdwfl.  See
 * symbolizer.c.
 *
 * Not thread-safe.  One symbolizer holds a libdwfl session, a lookup cache
 * and a string pool with no locks; callers serialise every call on it (the
 * UI thread owns it).  Different symbolizers may be used from different
 * threads.
 *
 * Only the caller's own processes: symbolizer_create refuses a pid whose
 * /proc entry belongs to another uid.  The target is never ptrace'd and its
 * memory is never read; everything comes from /proc/PID/{maps,status,exe}
 * and the ELF files it maps (symbolizer_unwind reads stacks only through
 * the caller's reader).
 */
#ifndef COROTOP_SYMBOLIZER_H
#define COROTOP_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/symbols/unwinder.h"

struct symbolizer;

/*
 * Strings are owned by the symbolizer and stay valid until
 * symbolizer_destroy, even across symbolizer_refresh.  They are at most 255
 * bytes (longer ones end in "..."), printable ASCII only: any other byte of
 * a name the target's files supply is shown as '?'.  A function is named as
 * people read it (symname.h): C++ and Rust names demangled, a C++20
 * coroutine's parts named after the coroutine, at most SYMNAME_MAX bytes.
 */
struct symbol {
	/* basename of the ELF file, or NULL if no mapping */
	const char *module;
	/* NULL if unknown */
	const char *function;
	/* from function start, or from module load base if no function; the
	 * address itself if no mapping */
	uint64_t offset;
	/* basename of the source file; NULL if no line info */
	const char *file;
	/* > 0 when file is set, else 0 */
	int line;
	/* module is the program's main executable (symbolizer_has_program) */
	bool program;
};

/* Counters for tests and benchmarks. */
struct symbolizer_stats {
	uint64_t lookups;    /* symbolizer_lookup calls */
	uint64_t hits;	     /* ... answered from the cache */
	uint64_t clears;     /* times the full cache was emptied */
	uint64_t maps_reads; /* times /proc/PID/maps was read */
	uint32_t cached;     /* entries in the cache now */
	uint32_t capacity;   /* entries the cache holds before it is cleared */
	size_t string_bytes; /* bytes held by the string pool */
	uint32_t modules;    /* ELF modules (and the vDSO) currently known */
	uint64_t reloads;    /* modules reported anew for fetched debug info */
};

/*
 * A symbolizer for process `pid`: reads /proc/PID/maps once.  Returns NULL
 * and a message in err (always terminated when errlen > 0) when the process
 * does not exist, belongs to another uid, or its maps can not be read (or
 * it exited while they were read).  A module whose file it opens after
 * the process exited is opened by its path when the process saw our root
 * directory.
 */
struct symbolizer *symbolizer_create(pid_t pid, char *err, size_t errlen);

/*
 * What was kept of a process while it ran (keptmaps.c), for when it has
 * exited before its symbolizer was made or last refreshed: its maps then,
 * and its /proc/PID directory, opened and found to be ours then.
 */
struct symbolizer_kept {
	int proc_fd;	  /* /proc/PID, owner checked when opened */
	const char *maps; /* the text of /proc/PID/maps */
	size_t maps_len;
	const char *exe;  /* where /proc/PID/exe linked ("": unknown) */
	uint64_t read_ns; /* CLOCK_MONOTONIC when the maps were read */
	/* The process saw our file system (the same root directory):
	 * its files can be opened by their paths once /proc/PID/root is
	 * gone.  False: they are not opened (no names but module+offset
	 * for modules opened while it ran). */
	bool same_root;
};

/*
 * symbolizer_create, reading the process through kept->proc_fd (NULL:
 * as symbolizer_create).  When the live maps are empty or gone (it
 * exited: a zombie, or reaped, or while they were read), its modules are
 * the kept maps', their files opened by path (kept->same_root), and the
 * main executable is kept->exe; the vDSO is named when our own is of the
 * same ABI.  Such a symbolizer is gone from the start (symbolizer_refresh
 * reads nothing).
 */
struct symbolizer *symbolizer_create_kept(pid_t pid,
					  const struct symbolizer_kept *kept,
					  char *err, size_t errlen);

/*
 * A process that runs no more and was never seen running: a core file's
 * (corotop --core).  Its modules are those of a maps text, their files
 * opened by their paths in our file system; entry: AT_ENTRY (0: unknown),
 * exe: the program's path.  Gone from the start.  pid: the core's, for
 * the unwinder's thread only (/proc/PID is never opened).
 */
struct symbolizer_image {
	pid_t pid;
	const char *maps;
	size_t maps_len;
	const char *exe;
	uint64_t entry;
};
struct symbolizer *symbolizer_create_image(const struct symbolizer_image *img,
					   char *err, size_t errlen);

/* Frees everything; NULL is a no-op. */
void symbolizer_destroy(struct symbolizer *s);

/* The address of the data object named `name` (its symbol table's, or
 * its dynamic one's) in the first module that defines one; false when
 * none does.  Walks every module's symbols: for a rare look-up (a core's
 * registry descriptor), not a hot path. */
bool symbolizer_find_object(struct symbolizer *s, const char *name,
			    uint64_t *addr);

/* The process saw our root directory, as its keeper found at its launch
 * (keptmaps_same_root): a symbolizer made before any maps were kept, whose
 * own look at /proc/PID/root came after the exit, opens the files of
 * modules it reports by their paths too, once /proc/PID/root is gone. */
void symbolizer_saw_root(struct symbolizer *s);

/*
 * Symbolize `addr` into *out (out must not be NULL; s may be, which gives
 * false).  True when it lies in a mapped ELF file (or the vDSO):
 * module is set, and function/file when known.  False when it lies in no
 * such mapping: module, function and file are NULL and offset is addr.
 * After the process exited, the modules it had last stay (their files were
 * opened while it ran), so the addresses it left behind are still named.
 * Results, negative ones included, are cached until the cache fills (then it is
 * emptied) or symbolizer_refresh sees a different set of modules.
 */
bool symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct symbol *out);

/*
 * "func+0x1a (file.c:42)", "func+0x1a", "libfoo.so+0x1234", or "0x7f..."
 * when unmapped.  Truncated to fit buf; terminated when n > 0.  Returns buf.
 */
const char *symbolizer_format(struct symbolizer *s, uint64_t addr, char *buf,
			      size_t n);

/*
 * Catch up with libraries mapped or unmapped since the last read.  Cheap to
 * call once a second: it reads /proc/PID/status and re-reads the maps only
 * when the executable mappings changed size (VmExe, VmLib), or every tenth
 * call; and reports every module anew when debuginfod fetched debug info
 * since (stats.reloads counts it).  Once the process has exited (or is a
 * zombie) it reads nothing again and changes nothing.
 */
void symbolizer_refresh(struct symbolizer *s);
/* The same, and when the process is found gone, its modules made those
 * of `kept` if that was read after the maps this symbolizer last read
 * live (a library loaded since); kept NULL: as symbolizer_refresh. */
void symbolizer_refresh_kept(struct symbolizer *s,
			     const struct symbolizer_kept *kept);

/*
 * Walk a stack of the target with its call frame information, from the
 * registers in r, reading its memory only through `read` (unwinder.h):
 * frames[0] = r->pc, then each caller's return address; how many (0 when
 * libdwfl cannot unwind here).  The symbolizer still never reads the
 * target's memory itself.
 */
size_t symbolizer_unwind(struct symbolizer *s, const struct unwinder_regs *r,
			 unwinder_read_fn read, void *ctx, uint64_t *frames,
			 size_t max);
void symbolizer_stats(const struct symbolizer *s, struct symbolizer_stats *out);

/*
 * Whether one of the modules is known as the program's main executable
 * (the one holding its entry point): only then does a symbol's `program`
 * say which frames are the program's and which a library's.
 */
bool symbolizer_has_program(const struct symbolizer *s);

#endif
