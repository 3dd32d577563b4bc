/*
 * symbolizer: addresses of a live target process as names, through elfutils
 * libdwfl, without ptrace and without reading the target's memory.
 *
 * The module map.  /proc/PID is opened once as a directory fd, after
 * checking it belongs to our uid; every later read goes through that fd, so
 * a pid recycled by another process can never be read in the target's
 * place (the old fd only fails).  /proc/PID/maps is read into a buffer and
 * handed to dwfl_linux_proc_maps_report, which reports one module per
 * mapped file, at the address where it really is: PIE executables, shared
 * libraries and ASLR need nothing more.  The vDSO line is reported by hand
 * as module "[vdso]".
 *
 * Opening files (our find_elf callback).  A module path is opened as
 * /proc/PID/root/<path>, so a target in another mount namespace gets its own
 * files; O_NONBLOCK plus a regular-file check means a path swapped for a
 * FIFO or device can not hang us; a "(deleted)" file is not opened at all,
 * since whatever has that name now is not what is mapped.  libelf reads the
 * file with pread (ELF_C_READ), not mmap: the target's owner can truncate
 * the file under us, which would raise SIGBUS in a mapping but is only a
 * short read here.  The vDSO is the same image in every process of our ELF
 * class and machine on this kernel, so it is read from our own vDSO.
 *
 * Separate debug info (our find_debuginfo callback) is looked up by build
 * ID under /usr/lib/debug/.build-id, then by .gnu_debuglink next to the file,
 * in its .debug/ and under /usr/lib/debug, each candidate checked against
 * the build ID; dwz files only under /usr/lib/debug.
 *
 * Then, when DEBUGINFOD_URLS is set, from debuginfod -- never while a
 * caller waits: the symbolizer is asked under symtab's lock, which the UI
 * thread takes too.  debugfetch.c fetches on a thread of its own; a first
 * ask only queues the build ID and the module goes on without debug info
 * (module+offset), and a build ID that failed is never asked again.
 * libdwfl looks for a module's debug info once, so when a file arrives
 * (symbolizer_refresh sees debugfetch_found move, at most once a second)
 * the modules are reported anew in a new libdwfl session (sym_reload),
 * the cache is emptied and stats.reloads tells symtab, whose generation
 * makes the name cache name everything again.  A process that has exited
 * is not reported again: names fetched after its exit are not used.
 *
 * libdwfl opens the file we return itself, with mmap, so a
 * separate debug file truncated while we read it can still raise SIGBUS;
 * the usual ones are root's, under /usr/lib/debug.
 *
 * A process that exited first.  A short program can exit before its
 * symbolizer is made: its /proc/PID/maps then reads empty (a zombie) or
 * is gone (reaped); and a read of it that spans the exit holds only its
 * first mappings (procfs_slurp_maps drops such a read: it is taken as
 * the zombie's).  symbolizer_create_kept takes what keptmaps.c kept
 * while it ran -- its /proc/PID fd, found ours then, and its maps text --
 * and reports the kept maps instead; its files, still on disk, are opened
 * by their paths in our own file system (own_root), which is only done
 * when the process saw the same one (the same root directory).  Its
 * main executable is the kept exe path (no auxv to read); the vDSO is
 * lent when that file is of our ABI.  A symbolizer made live that finds
 * the process gone at a refresh reports a kept copy read after its own
 * last read the same way, once.  A module whose file is opened after
 * the exit (the process read live, gone before its modules were opened)
 * is opened by its path when the process saw our root directory, kept
 * maps or not: its own look at /proc/PID/root at the creation, or, when
 * that came after the exit, the keeper's from the launch (symtab_tick,
 * symbolizer_saw_root).
 *
 * The main executable.  The module that holds the program's entry point
 * (AT_ENTRY in /proc/PID/auxv, when the target's words are ours), else the
 * one mapped from the file /proc/PID/exe names, is the program's: a
 * symbol's `program` bit, which framekind.c needs to tell the program's
 * frames from every shared library's.
 *
 * Each module carries a struct sym_module as its libdwfl userdata: the
 * symbolizer (for the callbacks), whether it is the main executable, and
 * the module's function index
 * (symindex.c), built on its first lookup, because libdwfl's own
 * dwfl_module_addrinfo walks the whole symbol table every time.  Lines come
 * from dwfl_module_getsrc -- but for code inlined from another file (a
 * library's header: Boost's condition_variable.hpp inlined into the
 * program's function), the line is the call site, in the compile unit's
 * own file, of the innermost inlined call made from that file
 * (callsite.c): the program's line that led there, not the header's.
 *
 * Lookups go through a cache: open addressing on the address, linear
 * probing, a fixed SYM_CACHE_SLOTS entries; at 3/4 full it is emptied and
 * starts again, so memory never grows with the number of lookups.  Failed
 * lookups are cached too.  Names are copied into a strpool (cleaned,
 * deduplicated, at most SYM_POOL_MAX bytes) that only symbolizer_destroy
 * frees, which keeps returned strings valid across cache clears and
 * refreshes.  The number of distinct names is that of the target's symbol
 * tables, not of lookups; past the bound, new names are dropped and the
 * address shows as module+offset.  A function's name is the symbol as
 * people read it (symname.c: demangled, a coroutine's parts named after
 * the coroutine, shortened), made the first time the symbol is found and
 * kept in its index entry, so each symbol is demangled once.
 */
#define _GNU_SOURCE
#include "engine/symbols/symbolizer.h"

#include "common/clock.h"
#include "common/hash.h"
#include "common/numtext.h"
#include "engine/target/procfs.h"
#include "common/strpool.h"
#include "engine/symbols/callsite.h"
#include "engine/symbols/debugfetch.h"
#include "engine/symbols/symindex.h"
#include "engine/names/symname.h"
#include "engine/symbols/unwinder.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYM_CACHE_BITS 14
#define SYM_CACHE_SLOTS (1u << SYM_CACHE_BITS)
#define SYM_CACHE_LIMIT (SYM_CACHE_SLOTS / 4 * 3)
#define SYM_POOL_MAX (8u << 20)
#define SYM_FUNCS_MAX (1u << 21) /* symbols read per module */
#define SYM_MAPS_MAX (64u << 20)
#define SYM_STATUS_MAX (64u << 10)
#define SYM_AUXV_MAX (64u << 10)
#define SYM_VDSO_MAX (1u << 20)
#define SYM_FULL_EVERY 10
#define SYM_BUILD_ID_MAX 64
#define SYM_DEBUG_DIR "/usr/lib/debug"
#define SYM_VDSO "[vdso]"

struct sym_entry {
	uint64_t addr;
	struct symbol sym;
	bool used;
	bool ok;
};

/* libdwfl's userdata of each module. */
struct sym_module {
	struct symbolizer *s;
	struct symindex *funcs;
	bool indexed; /* funcs was built (NULL then means none) */
	bool program; /* the program's main executable (sym_adopt) */
};

struct symbolizer {
	pid_t pid;
	int proc_fd; /* /proc/PID: every read of the target goes through it */
	Dwfl *dwfl;
	bool gone; /* the process exited: its modules stay as they were */
	/* During a create or refresh: the maps kept while it ran (NULL:
	 * none); own_root: its files are opened by path from our root (it
	 * exited, and saw our file system: symbolizer_kept.same_root). */
	const struct symbolizer_kept *kept;
	bool own_root;
	/* It saw our root directory when it was made (kept->same_root, or
	 * looked at then): its paths are ours once /proc/PID/root is gone. */
	bool same_root;
	uint64_t maps_ns;   /* CLOCK_MONOTONIC of the last live maps read */
	uint64_t vm_sig;    /* VmExe and VmLib when the maps were last read */
	unsigned refreshes; /* calls since the last maps read */
	uint64_t mod_sig;   /* hash of the module list, to notice changes */
	/* Where the program's main executable is: the module that holds its
	 * entry point (AT_ENTRY), else the one mapped from /proc/PID/exe's
	 * path; both unknown (0, ""): no module is known as the program. */
	uint64_t entry;
	char exe[PATH_MAX];
	bool has_program; /* some module is the main executable */
	/* debuginfod (debugfetch.c), when DEBUGINFOD_URLS is set; fetched:
	 * its count of files fetched when the modules were last reported. */
	struct debugfetch *fetch;
	uint64_t fetched;
	/* Our own vDSO, lent to a target of the same ELF class and machine. */
	bool vdso_same_abi;
	uint64_t vdso_size;
	char *vdso_image;
	struct sym_entry *cache;
	struct strpool *pool;
	struct symbolizer_stats stats;
	/* The CFI unwinder on this session (unwinder.c), made on first use;
	 * unw_failed: libdwfl refused, do not retry. */
	struct unwinder *unw;
	bool unw_failed;
};

static int sym_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
			Dwarf_Addr base, char **file_name, Elf **elfp);
static int sym_find_debuginfo(Dwfl_Module *mod, void **userdata,
			      const char *modname, Dwarf_Addr base,
			      const char *file_name, const char *debuglink,
			      GElf_Word crc, char **debuginfo_file_name);

static const Dwfl_Callbacks sym_callbacks = {
	.find_elf = sym_find_elf,
	.find_debuginfo = sym_find_debuginfo,
};

/* ---- files -------------------------------------------------------------- */

/* Open the target's file `path` (absolute, as the target sees it). */
static int sym_open_target(const struct symbolizer *s, const char *path)
{
	char buf[PATH_MAX + 8];
	int n = snprintf(buf, sizeof(buf), "root%s", path);

	if (path[0] != '/' || n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	int fd;

	/* It exited: /proc/PID/root is gone, its paths are ours. */
	if (s->own_root)
		return procfs_open_regular(AT_FDCWD, path);
	fd = procfs_open_regular(s->proc_fd, buf);
	/* It exited while we read it (a program of a few milliseconds):
	 * by its path, when it saw our file system (same_root), or the
	 * module would stay unnamed for good -- with maps kept or not (a
	 * symbolizer made before any keep). */
	if (fd < 0 && (errno == ENOENT || errno == ESRCH) && s->same_root)
		fd = procfs_open_regular(AT_FDCWD, path);
	return fd;
}

/* Copy our own vDSO, once, if the target can use it.  False if not. */
static bool sym_vdso_load(struct symbolizer *s)
{
	uint64_t start, end;
	size_t len;
	char *maps;

	if (s->vdso_image)
		return true;
	if (!s->vdso_same_abi)
		return false;
	maps = procfs_slurp(AT_FDCWD, "/proc/self/maps", SYM_MAPS_MAX, &len);
	if (maps && procfs_maps_find(maps, SYM_VDSO, &start, &end) &&
	    end - start == s->vdso_size && end - start <= SYM_VDSO_MAX) {
		s->vdso_image = malloc(end - start);
		if (s->vdso_image)
			memcpy(s->vdso_image, (const void *)(uintptr_t)start,
			       end - start);
	}
	free(maps);
	return s->vdso_image != NULL;
}

/* ---- libdwfl callbacks -------------------------------------------------- */

static bool sym_deleted(const char *name)
{
	size_t n = strlen(name), t = sizeof(" (deleted)") - 1;

	return n >= t && !strcmp(name + n - t, " (deleted)");
}

/* Dwfl_Callbacks.find_elf: *userdata is our sym_module (sym_adopt). */
static int sym_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
			Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct sym_module *m = *userdata;
	struct symbolizer *s = m ? m->s : NULL;
	Elf *elf;
	int fd;

	(void)mod;
	(void)base;
	if (!s || !name)
		return -1;
	if (!strcmp(name, SYM_VDSO)) {
		if (!sym_vdso_load(s))
			return -1;
		elf = elf_memory(s->vdso_image, s->vdso_size);
		if (elf && elf_kind(elf) == ELF_K_ELF)
			*elfp = elf;
		else if (elf)
			elf_end(elf);
		return -1;
	}
	if (name[0] != '/' || sym_deleted(name))
		return -1;
	fd = sym_open_target(s, name);
	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		close(fd);
		return -1;
	}
	*file_name = strdup(name);
	*elfp = elf;
	return fd;
}

/*
 * A debug-info candidate: a regular file whose build ID is `id` (when
 * given).  Opened through dirfd; returns the fd and its name.
 */
static int sym_debug_candidate(int dirfd, const char *open_path,
			       const char *name, const unsigned char *id,
			       int id_len, char **out_name)
{
	int fd = procfs_open_regular(dirfd, open_path);

	if (fd < 0)
		return -1;
	if (id) {
		Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
		const void *got = NULL;
		ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &got) : -1;
		bool same = n == id_len && got && !memcmp(got, id, (size_t)n);

		elf_end(elf);
		if (!same) {
			close(fd);
			return -1;
		}
	}
	*out_name = strdup(name);
	return fd;
}

/* Where a .gnu_debuglink name is looked for, around the file's directory. */
static const struct sym_link_dir {
	const char *prefix; /* before the file's directory */
	const char *sub;    /* after it */
	bool system;	    /* in our file system, not the target's */
} sym_link_dirs[] = {
	{.prefix = "", .sub = "", .system = false},
	{.prefix = "", .sub = "/.debug", .system = false},
	{.prefix = SYM_DEBUG_DIR, .sub = "", .system = true},
};

/* The .gnu_debuglink file of file_name, by its name `link`, around the
 * file's directory (sym_link_dirs); its fd, or -1. */
static int sym_debug_linked(const struct symbolizer *s, const char *file_name,
			    const char *link, const unsigned char *id,
			    int id_len, char **out_name)
{
	char path[PATH_MAX], root[PATH_MAX + 8];
	int dirlen;

	if (!link || !link[0] || !file_name || file_name[0] != '/' ||
	    strlen(link) > NAME_MAX)
		return -1;
	dirlen = (int)(strrchr(file_name, '/') - file_name);
	for (size_t i = 0; i < sizeof(sym_link_dirs) / sizeof(sym_link_dirs[0]);
	     i++) {
		const struct sym_link_dir *d = &sym_link_dirs[i];
		int n = snprintf(path, sizeof(path), "%s%.*s%s/%s", d->prefix,
				 dirlen, file_name, d->sub, link);
		bool mine;
		int fd;

		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		snprintf(root, sizeof(root), "root%s", path);
		mine = d->system || s->own_root; /* sym_open_target */
		fd = sym_debug_candidate(mine ? AT_FDCWD : s->proc_fd,
					 mine ? path : root, path, id, id_len,
					 out_name);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* The file debuginfod fetched for build ID id, when it has (never waits:
 * a first ask queues the fetch, debugfetch.c); its fd, or -1. */
static int sym_debug_fetched(struct symbolizer *s, const unsigned char *id,
			     int id_len, char **out_name)
{
	char *path = NULL;
	int fd = -1;

	if (s->fetch && debugfetch_get(s->fetch, id, (size_t)id_len, &path) ==
				DEBUGFETCH_FOUND) {
		fd = sym_debug_candidate(AT_FDCWD, path, path, id, id_len,
					 out_name);
		free(path);
	}
	return fd;
}

/* Dwfl_Callbacks.find_debuginfo: see the comment at the top. */
static int sym_find_debuginfo(Dwfl_Module *mod, void **userdata,
			      const char *modname, Dwarf_Addr base,
			      const char *file_name, const char *debuglink,
			      GElf_Word crc, char **debuginfo_file_name)
{
	struct sym_module *m = *userdata;
	struct symbolizer *s = m ? m->s : NULL;
	const unsigned char *id = NULL;
	GElf_Addr id_vaddr;
	char path[PATH_MAX];
	int id_len, fd, off;

	(void)modname;
	(void)base;
	(void)crc; /* the build ID check replaces the CRC check */
	if (!s)
		return -1;
	/* A dwz alternate file: a path, trusted only in the system dir. */
	if (debuglink && strchr(debuglink, '/')) {
		if (strncmp(debuglink, SYM_DEBUG_DIR "/",
			    sizeof(SYM_DEBUG_DIR)) ||
		    strstr(debuglink, "/../"))
			return -1;
		return sym_debug_candidate(AT_FDCWD, debuglink, debuglink, NULL,
					   0, debuginfo_file_name);
	}
	/* Without a build ID no candidate can be checked: none is used. */
	id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	if (id_len <= 1 || id_len > SYM_BUILD_ID_MAX || !id)
		return -1;
	off = snprintf(path, sizeof(path), SYM_DEBUG_DIR "/.build-id/%02x/",
		       id[0]);
	for (int i = 1; i < id_len; i++)
		off += snprintf(path + off, sizeof(path) - (size_t)off, "%02x",
				id[i]);
	snprintf(path + off, sizeof(path) - (size_t)off, ".debug");
	fd = sym_debug_candidate(AT_FDCWD, path, path, id, id_len,
				 debuginfo_file_name);
	if (fd < 0)
		fd = sym_debug_linked(s, file_name, debuglink, id, id_len,
				      debuginfo_file_name);
	if (fd < 0)
		fd = sym_debug_fetched(s, id, id_len, debuginfo_file_name);
	return fd;
}

/* ---- the module map ----------------------------------------------------- */

struct sym_walk {
	struct symbolizer *s;
	uint64_t sig;
	uint32_t modules;
	bool program; /* a module is the main executable */
};

static uint64_t sym_mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull; /* FNV-1a, a word at a time */
}

/* Give a new module its sym_module; hash the module list. */
static int sym_adopt(Dwfl_Module *mod, void **userdata, const char *name,
		     Dwarf_Addr start, void *arg)
{
	struct sym_walk *w = arg;
	Dwarf_Addr end = 0;

	if (!*userdata) {
		struct sym_module *m = calloc(1, sizeof(*m));
		Dwarf_Addr bias;

		if (m)
			m->s = w->s;
		*userdata = m; /* NULL: the module stays unresolved */
		/* Its file opened now, through /proc/PID/root while that
		 * exists (or by its path once it exited: own_root): after
		 * the exit the stacks the target left are still named from
		 * it (the fd outlives the process). */
		if (m && !w->s->gone)
			(void)dwfl_module_getelf(mod, &bias);
	}
	dwfl_module_info(mod, NULL, NULL, &end, NULL, NULL, NULL, NULL);
	if (*userdata) {
		struct sym_module *m = *userdata;
		const struct symbolizer *s = w->s;

		m->program =
			s->entry ? s->entry >= start && s->entry < end
				 : s->exe[0] && name && !strcmp(name, s->exe);
		w->program |= m->program;
	}
	w->sig = sym_mix(sym_mix(w->sig, start), end);
	for (const char *p = name ? name : ""; *p; p++)
		w->sig = sym_mix(w->sig, (unsigned char)*p);
	w->modules++;
	return DWARF_CB_OK;
}

/* Free a module's sym_module; `userdata` is the module's void ** (what
 * dwfl_report_end passes its `removed` callback, despite the void *). */
static int sym_forget(Dwfl_Module *mod, void *userdata, const char *name,
		      Dwarf_Addr start, void *arg)
{
	void **slot = userdata;
	struct sym_module *m = *slot;

	(void)mod;
	(void)name;
	(void)start;
	(void)arg;
	if (m)
		symindex_destroy(m->funcs);
	free(m);
	*slot = NULL;
	return DWARF_CB_OK;
}

/* The same for dwfl_getmodules, before dwfl_end. */
static int sym_forget_all(Dwfl_Module *mod, void **userdata, const char *name,
			  Dwarf_Addr start, void *arg)
{
	return sym_forget(mod, userdata, name, start, arg);
}

static void sym_cache_clear(struct symbolizer *s)
{
	memset(s->cache, 0, SYM_CACHE_SLOTS * sizeof(*s->cache));
	s->stats.cached = 0;
}

/* After a report: adopt the modules, drop the cache if they changed. */
static void sym_settle(struct symbolizer *s)
{
	struct sym_walk w = {.s = s, .sig = 0xcbf29ce484222325ull};

	dwfl_getmodules(s->dwfl, sym_adopt, &w, 0);
	s->stats.modules = w.modules;
	s->has_program = w.program;
	if (w.sig != s->mod_sig) {
		s->mod_sig = w.sig;
		sym_cache_clear(s);
	}
}

static bool sym_errno_gone(int e)
{
	return e == ENOENT || e == ESRCH;
}

static int sym_report_text(struct symbolizer *s, const char *maps, size_t len);

/*
 * Read /proc/PID/maps and report its modules; when they are empty or gone
 * (it exited) and maps were kept (s->kept), report those, with its files
 * opened by path when it saw our file system, and 1 (it is gone).  0, or
 * an errno (the modules are then unchanged, or as far as the maps could be
 * parsed).
 */
static int sym_report(struct symbolizer *s)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
	size_t len;
	/* Whole or empty: a read its exit cut short lacks modules. */
	char *maps = procfs_slurp_maps(s->proc_fd, SYM_MAPS_MAX, &len);
	int rc = maps ? 0 : errno ? errno : EIO;

	if (maps && !len) { /* a zombie's: every live process maps something */
		free(maps);
		maps = NULL;
		rc = ESRCH;
	}
	if (!maps && sym_errno_gone(rc) && s->kept && s->kept->maps_len &&
	    s->kept->read_ns > s->maps_ns) {
		s->own_root = s->kept->same_root;
		s->maps_ns = s->kept->read_ns;
		rc = sym_report_text(s, s->kept->maps, s->kept->maps_len);
		return rc ? rc : 1;
	}
	if (!maps)
		return rc;
	s->maps_ns = now;
	rc = sym_report_text(s, maps, len);
	free(maps);
	return rc;
}

/* Report the modules of a maps text.  0, or an errno. */
static int sym_report_text(struct symbolizer *s, const char *maps, size_t len)
{
	uint64_t start, end;
	int rc = 0;

	s->stats.maps_reads++;
	dwfl_report_begin(s->dwfl);
	if (len > 0) {
		FILE *f = fmemopen((void *)maps, len, "r");

		rc = f ? dwfl_linux_proc_maps_report(s->dwfl, f) : errno;
		if (f)
			fclose(f);
		if (rc < 0)
			rc = ENOMEM; /* dwfl_report_module failed */
	}
	if (procfs_maps_find(maps, SYM_VDSO, &start, &end) &&
	    end - start <= SYM_VDSO_MAX) {
		s->vdso_size = end - start;
		dwfl_report_module(s->dwfl, SYM_VDSO, start, end);
	}
	if (dwfl_report_end(s->dwfl, sym_forget, NULL) != 0 && !rc)
		rc = ENOMEM;
	sym_settle(s);
	return rc;
}

/*
 * The process exited: its maps are read no more, and the modules it had
 * stay -- no address can change meaning in a process that runs no more,
 * and the stacks it left behind (the last CallTrace rotation, the
 * sampler's copies) are named from them.  Their files were opened when
 * they were reported (sym_adopt); one that could not be opened then has
 * no names now.
 */
static void sym_gone(struct symbolizer *s)
{
	s->gone = true;
}

/* VmExe and VmLib from /proc/PID/status.  0, or an errno. */
static int sym_vm_sig(struct symbolizer *s, uint64_t *sig)
{
	size_t len;
	char *st = procfs_slurp(s->proc_fd, "status", SYM_STATUS_MAX, &len);

	if (!st)
		return errno ? errno : EIO;
	*sig = procfs_status_value(st, "VmExe") << 32 ^
	       procfs_status_value(st, "VmLib");
	free(st);
	return 0;
}

/* Where the main executable is (see struct symbolizer): AT_ENTRY from
 * /proc/PID/auxv when the target's words are ours, and the path
 * /proc/PID/exe links to. */
static void sym_find_program(struct symbolizer *s)
{
	size_t len;
	char *auxv = s->vdso_same_abi ? procfs_slurp(s->proc_fd, "auxv",
						     SYM_AUXV_MAX, &len)
				      : NULL;
	ssize_t n;

	for (size_t at = 0; auxv && at + 2 * sizeof(unsigned long) <= len;
	     at += 2 * sizeof(unsigned long)) {
		unsigned long kv[2];

		memcpy(kv, auxv + at, sizeof(kv));
		if (kv[0] == AT_NULL)
			break;
		if (kv[0] == AT_ENTRY)
			s->entry = kv[1];
	}
	free(auxv);
	n = readlinkat(s->proc_fd, "exe", s->exe, sizeof(s->exe) - 1);
	s->exe[n > 0 ? n : 0] = '\0';
	if (n <= 0 && s->kept && s->kept->exe) /* gone: where it was */
		snprintf(s->exe, sizeof(s->exe), "%s", s->kept->exe);
}

/*
 * Report every module anew, in a new libdwfl session: libdwfl looks for a
 * module's debug info once, so a file debuginfod fetched since is used
 * only by a module reported again.  The old session (and the unwinder on
 * it) goes; strings already returned stay (the pool keeps them).  On
 * failure the old session stays.
 */
static void sym_reload(struct symbolizer *s)
{
	Dwfl *old = s->dwfl, *d = dwfl_begin(&sym_callbacks);
	int rc;

	if (!d)
		return;
	s->dwfl = d;
	rc = sym_report(s);
	if (rc != 0 && rc != 1) { /* 1: reported from the kept maps */
		dwfl_getmodules(d, sym_forget_all, NULL, 0);
		dwfl_end(d);
		s->dwfl = old;
		sym_settle(s);
		return;
	}
	dwfl_getmodules(old, sym_forget_all, NULL, 0);
	dwfl_end(old);
	unwinder_destroy(s->unw); /* after dwfl_end, which may call it */
	s->unw = NULL;
	s->unw_failed = false;
	sym_cache_clear(s);
	s->stats.reloads++;
}

/* ---- the API ------------------------------------------------------------ */

void symbolizer_saw_root(struct symbolizer *s)
{
	if (s)
		s->same_root = true;
}

struct symbolizer *symbolizer_create(pid_t pid, char *err, size_t errlen)
{
	return symbolizer_create_kept(pid, NULL, err, errlen);
}

/* A new symbolizer's cache, string pool and libdwfl session; false with
 * a message. */
static bool sym_session(struct symbolizer *s, char *err, size_t errlen)
{
	s->cache = calloc(SYM_CACHE_SLOTS, sizeof(*s->cache));
	s->pool = strpool_create(SYM_POOL_MAX);
	if (!s->cache || !s->pool) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	elf_version(EV_CURRENT);
	s->dwfl = dwfl_begin(&sym_callbacks);
	if (!s->dwfl) {
		snprintf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
		return false;
	}
	return true;
}

struct symbolizer *symbolizer_create_kept(pid_t pid,
					  const struct symbolizer_kept *kept,
					  char *err, size_t errlen)
{
	struct symbolizer *s;
	char path[32];
	struct stat st;
	uint32_t abi;
	int rc;

	if (errlen)
		err[0] = '\0';
	if (pid <= 0) {
		snprintf(err, errlen, "%d is not a process id", (int)pid);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->pid = pid;
	s->kept = kept;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	/* Kept: the directory opened while it ran, the same process or
	 * nothing now (its owner is checked again: it can exec a set-uid
	 * program; a reaped one's still says ours). */
	s->proc_fd = kept ? fcntl(kept->proc_fd, F_DUPFD_CLOEXEC, 0)
			  : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->proc_fd < 0 || fstat(s->proc_fd, &st) < 0) {
		snprintf(err, errlen,
			 "cannot open %s: %s; is process %d running?", path,
			 strerror(errno), (int)pid);
		goto err_free;
	}
	if (st.st_uid != getuid() || st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "process %d belongs to uid %u, not to you (uid %u); "
			 "corotop symbolizes only your own processes",
			 (int)pid, (unsigned)st.st_uid, (unsigned)getuid());
		goto err_free;
	}
	if (!sym_session(s, err, errlen))
		goto err_free;
	s->same_root = kept ? kept->same_root
			    : procfs_same_file(s->proc_fd, "root", "/") == 1;
	abi = procfs_elf_abi(s->proc_fd, "exe");
	/* Gone: its executable's file, when its paths are ours. */
	if (!abi && kept && kept->same_root && kept->exe && kept->exe[0] == '/')
		abi = procfs_elf_abi(AT_FDCWD, kept->exe);
	s->vdso_same_abi =
		abi && abi == procfs_elf_abi(AT_FDCWD, "/proc/self/exe");
	if (sym_vm_sig(s, &s->vm_sig))
		s->vm_sig = 0;
	sym_find_program(s);
	s->fetch = debugfetch_create();
	rc = sym_report(s);
	s->kept = NULL; /* the caller's, for this call only */
	if (rc == 1) {	/* from the kept maps: it has exited */
		sym_gone(s);
		rc = 0;
	}
	if (rc) {
		snprintf(err, errlen,
			 "cannot read the mappings of process %d "
			 "(/proc/%d/maps): %s",
			 (int)pid, (int)pid, strerror(rc));
		goto err_free;
	}
	s->stats.capacity = SYM_CACHE_LIMIT;
	return s;
err_free:
	symbolizer_destroy(s);
	return NULL;
}

struct symbolizer *symbolizer_create_image(const struct symbolizer_image *img,
					   char *err, size_t errlen)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	uint32_t abi;
	int rc;

	if (errlen)
		err[0] = '\0';
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->pid = img->pid > 0 ? img->pid : 1;
	s->proc_fd = -1;
	if (!sym_session(s, err, errlen))
		goto err_free;
	/* Its files are ours, by their paths. */
	s->same_root = s->own_root = true;
	abi = img->exe ? procfs_elf_abi(AT_FDCWD, img->exe) : 0;
	s->vdso_same_abi =
		abi && abi == procfs_elf_abi(AT_FDCWD, "/proc/self/exe");
	s->entry = img->entry;
	snprintf(s->exe, sizeof(s->exe), "%s", img->exe ? img->exe : "");
	s->fetch = debugfetch_create();
	rc = sym_report_text(s, img->maps, img->maps_len);
	sym_gone(s);
	if (rc) {
		snprintf(err, errlen, "cannot report the core's modules: %s",
			 strerror(rc));
		goto err_free;
	}
	s->stats.capacity = SYM_CACHE_LIMIT;
	return s;
err_free:
	symbolizer_destroy(s);
	return NULL;
}

/* dwfl_getmodules' callback of symbolizer_find_object. */
struct sym_find {
	const char *name;
	uint64_t addr;
	bool found;
};

static int sym_find_one(Dwfl_Module *mod, void **userdata, const char *mname,
			Dwarf_Addr base, void *arg)
{
	struct sym_find *f = arg;
	int n = dwfl_module_getsymtab(mod);

	(void)userdata;
	(void)mname;
	(void)base;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr,
							   &shndx, NULL, NULL);

		if (name && shndx != SHN_UNDEF &&
		    GELF_ST_TYPE(sym.st_info) == STT_OBJECT &&
		    !strcmp(name, f->name)) {
			f->addr = addr;
			f->found = true;
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

bool symbolizer_find_object(struct symbolizer *s, const char *name,
			    uint64_t *addr)
{
	struct sym_find f = {.name = name};

	if (!s || !s->dwfl)
		return false;
	dwfl_getmodules(s->dwfl, sym_find_one, &f, 0);
	*addr = f.addr;
	return f.found;
}

void symbolizer_destroy(struct symbolizer *s)
{
	if (!s)
		return;
	if (s->dwfl) {
		dwfl_getmodules(s->dwfl, sym_forget_all, NULL, 0);
		dwfl_end(s->dwfl); /* before the vDSO image it may use */
	}
	unwinder_destroy(s->unw); /* after dwfl_end, which may call it */
	debugfetch_destroy(s->fetch);
	free(s->vdso_image);
	strpool_destroy(s->pool);
	free(s->cache);
	if (s->proc_fd >= 0)
		close(s->proc_fd);
	free(s);
}

/* The function symbols of a module, sorted (NULL if it has none). */
static struct symindex *sym_index(Dwfl_Module *mod, Dwarf_Addr end)
{
	int n = dwfl_module_getsymtab(mod);
	struct symindex_entry *v;
	size_t k = 0;

	if (n <= 1)
		return NULL;
	if ((unsigned)n > SYM_FUNCS_MAX)
		n = SYM_FUNCS_MAX;
	v = malloc((size_t)n * sizeof(*v));
	if (!v)
		return NULL;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr,
							   &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		int bind = GELF_ST_BIND(sym.st_info);

		if (!name || !name[0] || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		v[k].addr = addr;
		v[k].size = sym.st_size;
		v[k].name = name;
		v[k].shown = NULL;
		v[k].bind = bind == STB_GLOBAL ? SYMINDEX_GLOBAL
			    : bind == STB_WEAK ? SYMINDEX_WEAK
					       : SYMINDEX_LOCAL;
		k++;
	}
	return symindex_create(v, k, end);
}

/* A function symbol's name as people read it (symname), pooled; NULL when
 * it is empty or the pool is full.  Once per symbol: the index keeps it. */
static const char *sym_show(struct symbolizer *s, const char *raw)
{
	char shown[SYMNAME_MAX + 1];
	size_t len = symname_format(raw, strlen(raw), shown, sizeof(shown));

	return len ? strpool_intern(s->pool, shown, len) : NULL;
}

/* Symbolize one address, uncached.  See symbolizer_lookup. */
static bool sym_resolve(struct symbolizer *s, uint64_t addr, struct symbol *out)
{
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
	Dwarf_Addr start = 0, end = 0;
	struct symindex_entry *fn = NULL;
	struct sym_module *m;
	const char *name;
	void **userdata;
	Dwfl_Line *line;

	memset(out, 0, sizeof(*out));
	out->offset = addr;
	if (!mod)
		return false;
	name = dwfl_module_info(mod, &userdata, &start, &end, NULL, NULL, NULL,
				NULL);
	m = *userdata;
	name = name ? name : "?";
	name = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	out->module = strpool_intern(s->pool, name, strlen(name));
	if (!out->module)
		out->module = "?";
	out->program = m && m->program;
	out->offset = addr - start;
	if (m && !m->indexed) {
		m->funcs = sym_index(mod, end);
		m->indexed = true;
	}
	fn = m ? symindex_find(m->funcs, addr) : NULL;
	if (fn && !fn->shown)
		fn->shown = sym_show(s, fn->name);
	if (fn && fn->shown) {
		out->function = fn->shown;
		out->offset = addr - fn->addr;
	}
	line = dwfl_module_getsrc(mod, addr);
	if (line) {
		int lineno = 0;
		const char *src =
			dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		const char *base = callsite_base(src);

		/* The program's line that led into an inlined header. */
		(void)callsite_in_unit(mod, addr, base, &base, &lineno);
		if (base && base[0] && lineno > 0) {
			out->file = strpool_intern(s->pool, base, strlen(base));
			out->line = out->file ? lineno : 0;
		}
	}
	return true;
}

static struct sym_entry *sym_cache_slot(struct symbolizer *s, uint64_t addr)
{
	uint32_t i = (uint32_t)hash_fib(addr, 64 - SYM_CACHE_BITS);

	while (s->cache[i].used && s->cache[i].addr != addr)
		i = (i + 1) & (SYM_CACHE_SLOTS - 1);
	return &s->cache[i];
}

bool symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct symbol *out)
{
	struct sym_entry *e;

	if (!s) {
		memset(out, 0, sizeof(*out));
		out->offset = addr;
		return false;
	}
	s->stats.lookups++;
	e = sym_cache_slot(s, addr);
	if (e->used) {
		s->stats.hits++;
	} else {
		if (s->stats.cached >= SYM_CACHE_LIMIT) {
			sym_cache_clear(s);
			s->stats.clears++;
			e = sym_cache_slot(s, addr);
		}
		e->ok = sym_resolve(s, addr, &e->sym);
		e->addr = addr;
		e->used = true;
		s->stats.cached++;
	}
	*out = e->sym;
	return e->ok;
}

const char *symbolizer_format(struct symbolizer *s, uint64_t addr, char *buf,
			      size_t n)
{
	struct symbol y;

	if (!buf || !n)
		return buf;
	if (!symbolizer_lookup(s, addr, &y)) {
		/* "0x…" without printf: a filter formats 100k of these. */
		snprintf(buf, n, "0x");
		if (n > 2)
			numtext_hex(buf + 2, n - 2, addr);
	} else if (y.function && y.file)
		snprintf(buf, n, "%s+0x%" PRIx64 " (%s:%d)", y.function,
			 y.offset, y.file, y.line);
	else
		snprintf(buf, n, "%s+0x%" PRIx64,
			 y.function ? y.function : y.module, y.offset);
	return buf;
}

void symbolizer_refresh(struct symbolizer *s)
{
	symbolizer_refresh_kept(s, NULL);
}

/* The process was found gone: its kept maps reported if newer than the
 * last live read (sym_report), then nothing read again. */
static void sym_refresh_gone(struct symbolizer *s)
{
	if (s->kept)
		(void)sym_report(s);
	sym_gone(s);
}

static void sym_refresh(struct symbolizer *s)
{
	uint64_t sig;
	int rc;

	/* debuginfod fetched files since the modules were reported. */
	if (debugfetch_found(s->fetch) != s->fetched) {
		s->fetched = debugfetch_found(s->fetch);
		sym_reload(s);
	}
	rc = sym_vm_sig(s, &sig);
	if (rc) {
		if (sym_errno_gone(rc))
			sym_refresh_gone(s);
		return;
	}
	if (sig == s->vm_sig && ++s->refreshes < SYM_FULL_EVERY)
		return;
	rc = sym_report(s);
	if (rc == 1 || sym_errno_gone(rc)) { /* 1: reported from kept */
		sym_gone(s);
		return;
	}
	s->vm_sig = sig;
	s->refreshes = 0;
}

void symbolizer_refresh_kept(struct symbolizer *s,
			     const struct symbolizer_kept *kept)
{
	if (!s || s->gone)
		return;
	s->kept = kept;
	sym_refresh(s);
	s->kept = NULL; /* the caller's, for this call only */
}

bool symbolizer_has_program(const struct symbolizer *s)
{
	return s && s->has_program;
}

void symbolizer_stats(const struct symbolizer *s, struct symbolizer_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	*out = s->stats;
	out->string_bytes = strpool_bytes(s->pool);
}

size_t symbolizer_unwind(struct symbolizer *s, const struct unwinder_regs *r,
			 unwinder_read_fn read, void *ctx, uint64_t *frames,
			 size_t max)
{
	if (!s)
		return 0;
	if (!s->unw && !s->unw_failed) {
		s->unw = unwinder_create(s->dwfl, s->pid);
		s->unw_failed = !s->unw;
	}
	return unwinder_run(s->unw, r, read, ctx, frames, max);
}
