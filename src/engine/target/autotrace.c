/*
 * autotrace: the program is found as execvp would find it and read with
 * libelf (untrusted bytes: libelf bounds its own reads; we read nothing it
 * did not check).  The dynamic loader honours LD_PRELOAD only for a
 * dynamically linked program (one with PT_INTERP) that is not set-user or
 * set-group-ID; a program whose DT_NEEDED names libcorotop-probe, or that
 * carries the probe itself (the static probe: its ELF note, probe.h, or
 * corotop_coro_open in its symbol table), is traced by its own
 * calls and must not be traced twice; one built with AddressSanitizer or
 * ThreadSanitizer needs its runtime first in the library list, which a
 * preloaded library would displace.
 *
 * The library is looked for, in order: $COROTOP_PRELOAD, the build tree's
 * copy (a corotop run from its build directory), the installed copy.  A
 * COROTOP_PRELOAD that is set is the only place looked: the user named the
 * library, and another one found in its stead would not be theirs.  A
 * library found nowhere is an error the caller stops on (the quick start
 * must not end in an empty table), and the note says how to build it: the
 * ninja command in the build tree corotop was built in, when that tree is
 * still there.
 *
 * A corotop built with AddressSanitizer or ThreadSanitizer (a developer's
 * build: scripts/test makes them) has an instrumented preload library too,
 * which cannot be loaded into a program that is not: such a corotop never
 * preloads, and says nothing (its tests of the preload skip).
 */
#define _GNU_SOURCE
#include "engine/target/autotrace.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corotop/probe.h"

#ifndef COROTOP_PRELOAD_BUILD
#define COROTOP_PRELOAD_BUILD ""
#endif
#ifndef COROTOP_PRELOAD_INSTALLED
#define COROTOP_PRELOAD_INSTALLED ""
#endif
#ifndef COROTOP_BUILD_ROOT
#define COROTOP_BUILD_ROOT ""
#endif
#ifndef COROTOP_PRELOAD_TARGET
#define COROTOP_PRELOAD_TARGET "src/preload/libcorotop-preload.so"
#endif

/* argv0 as execvp finds it (a regular file it may execute), into out. */
static bool autotrace_find(const char *argv0, char *out, size_t n)
{
	const char *path = getenv("PATH");
	struct stat st;

	if (strchr(argv0, '/')) {
		snprintf(out, n, "%s", argv0);
		return stat(out, &st) == 0 && S_ISREG(st.st_mode);
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		if ((size_t)snprintf(out, n, "%.*s%s%s", (int)len, path,
				     len ? "/" : "", argv0) < n &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0)
			return true;
		path += len + (path[len] == ':');
	}
	out[0] = '\0';
	return false;
}

bool autotrace_library(char *out, size_t n)
{
	const char *env = getenv("COROTOP_PRELOAD");
	const char *where[] = {COROTOP_PRELOAD_BUILD,
			       COROTOP_PRELOAD_INSTALLED};

	if (env && env[0]) {
		snprintf(out, n, "%s", env);
		return access(env, R_OK) == 0;
	}
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (where[i][0] && access(where[i], R_OK) == 0) {
			snprintf(out, n, "%s", where[i]);
			return true;
		}
	snprintf(out, n, "%s", COROTOP_PRELOAD_INSTALLED);
	return false;
}

void autotrace_build_hint(char *out, size_t n)
{
	char ninja[4096];

	snprintf(ninja, sizeof(ninja), "%s/build.ninja", COROTOP_BUILD_ROOT);
	if (COROTOP_BUILD_ROOT[0] && access(ninja, R_OK) == 0)
		snprintf(out, n, "build it with: ninja -C %s %s",
			 COROTOP_BUILD_ROOT, COROTOP_PRELOAD_TARGET);
	else
		snprintf(out, n,
			 "install it with corotop (meson install puts it "
			 "at %s)",
			 COROTOP_PRELOAD_INSTALLED);
}

/* Whether note section scn holds the probe's note (probe.h): a program
 * that links the probe statically, stripped or not. */
static bool autotrace_note_probe(Elf_Scn *scn)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, name, desc;
	GElf_Nhdr n;

	while (d && off < d->d_size &&
	       (off = gelf_getnote(d, off, &n, &name, &desc)) != 0)
		if (n.n_type == COROTOP_NOTE_PROBE &&
		    n.n_namesz == sizeof(COROTOP_NOTE_NAME) &&
		    !memcmp((const char *)d->d_buf + name, COROTOP_NOTE_NAME,
			    sizeof(COROTOP_NOTE_NAME)))
			return true;
	return false;
}

/* What the ELF file says: dynamic, and whether it links the probe or a
 * sanitizer runtime.  False when it is not an ELF file libelf can read. */
static bool autotrace_elf(int fd, bool *dynamic, bool *probe, bool *sanitizer)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t nph = 0;

	*dynamic = *probe = *sanitizer = false;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return false;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return false;
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph) != 0) {
		elf_end(e);
		return false;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
			*dynamic = true;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t count;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    autotrace_note_probe(scn))
			*probe = true;
		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    (sh.sh_type != SHT_DYNAMIC && sh.sh_type != SHT_DYNSYM &&
		     sh.sh_type != SHT_SYMTAB))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		count = sh.sh_size / sh.sh_entsize;
		for (size_t k = 0; k < count; k++) {
			const char *name;

			if (sh.sh_type == SHT_DYNAMIC) {
				GElf_Dyn dyn;

				if (!gelf_getdyn(d, (int)k, &dyn) ||
				    dyn.d_tag != DT_NEEDED)
					continue;
				name = elf_strptr(e, sh.sh_link,
						  dyn.d_un.d_val);
				if (!name)
					continue;
				if (strstr(name, "libcorotop-probe.so"))
					*probe = true;
				if (!strncmp(name, "libasan.so", 10) ||
				    !strncmp(name, "libtsan.so", 10))
					*sanitizer = true;
			} else {
				GElf_Sym sym;

				if (!gelf_getsym(d, (int)k, &sym) ||
				    sym.st_shndx == SHN_UNDEF)
					continue;
				name = elf_strptr(e, sh.sh_link, sym.st_name);
				if (name && !strcmp(name, "corotop_coro_open"))
					*probe = true;
			}
		}
	}
	elf_end(e);
	return true;
}

void autotrace_check(const char *argv0, struct autotrace *out)
{
	bool dynamic, probe, sanitizer;
	struct stat st;
	int fd;

	memset(out, 0, sizeof(*out));
	out->verdict = AUTOTRACE_UNKNOWN;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return;
#endif
	if (!argv0 || !autotrace_find(argv0, out->path, sizeof(out->path)))
		return;
	fd = open(out->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 ||
	    !autotrace_elf(fd, &dynamic, &probe, &sanitizer)) {
		close(fd);
		return;
	}
	close(fd);
	if (probe) {
		out->verdict = AUTOTRACE_LINKED;
	} else if (!dynamic) {
		out->verdict = AUTOTRACE_STATIC;
		snprintf(out->note, sizeof(out->note),
			 "%s is statically linked: its context switches are "
			 "not traced (link it with the probe)",
			 argv0);
	} else if (st.st_mode & (S_ISUID | S_ISGID)) {
		out->verdict = AUTOTRACE_SETUID;
		snprintf(out->note, sizeof(out->note),
			 "%s is set-user/group-ID: the loader ignores "
			 "LD_PRELOAD, so its context switches are not traced",
			 argv0);
	} else if (sanitizer) {
		out->verdict = AUTOTRACE_SANITIZER;
		snprintf(out->note, sizeof(out->note),
			 "%s is built with a sanitizer whose runtime must come "
			 "first: its context switches are not traced",
			 argv0);
	} else if (!autotrace_library(out->library, sizeof(out->library))) {
		const char *env = getenv("COROTOP_PRELOAD");
		char hint[512];

		out->verdict = AUTOTRACE_NO_LIBRARY;
		autotrace_build_hint(hint, sizeof(hint));
		if (env && env[0])
			snprintf(out->note, sizeof(out->note),
				 "COROTOP_PRELOAD=%s cannot be read, so %s "
				 "cannot be traced without a code change: "
				 "point it at libcorotop-preload.so, or unset "
				 "it; %s (--no-auto runs it untraced)",
				 env, argv0, hint);
		else
			snprintf(out->note, sizeof(out->note),
				 "libcorotop-preload.so was not found, so %s "
				 "cannot be traced without a code change; %s "
				 "(or set COROTOP_PRELOAD to its path; "
				 "--no-auto runs it untraced)",
				 argv0, hint);
	} else {
		out->verdict = AUTOTRACE_PRELOAD;
	}
}
