/*
 * pptfind: where a running process keeps its ppt buffers.
 *
 * A ppt buffer is three global symbols (pptfind.h has both spellings), and
 * the agent needs their run-time addresses.  They come from the ELF symbol
 * tables of the files the process has mapped, the way the dynamic linker
 * would bind them:
 *
 *   1. /proc/PID/maps, one line per mapping, is grouped into objects: the
 *      mappings of one file (device, inode and path).  Anonymous mappings,
 *      [heap] and the like are not files and are left out.
 *   2. Each object's load bias is where its first PT_LOAD segment landed:
 *      the start of the mapping whose file offset is that segment's offset
 *      (page aligned) minus the segment's page-aligned p_vaddr.  ET_EXEC
 *      files are not relocated (bias 0).
 *   3. .symtab and .dynsym are read with libelf; every defined data symbol
 *      (STT_OBJECT or STT_NOTYPE) spelled like a ppt symbol is a candidate.
 *   4. Binding is per symbol: the executable first (its copy of a library's
 *      symbol, made by a copy relocation, is the one the library uses too),
 *      then the libraries in maps order; the first definition wins.
 *   5. A name with all three symbols is a buffer; others are skipped with a
 *      warning, as are names too long or not made of [A-Za-z0-9_].
 *
 * Files are the target's and untrusted.  A path from maps is read only when
 * the file there has the mapping's device and inode (a library replaced on
 * disk since is read through /proc/PID/map_files instead, which needs
 * privilege, or skipped with a warning); only regular files up to 1 GiB are
 * opened, never blocking (procfs_open_regular); libelf reads them without
 * mmap, so a file truncated under us fails a read instead of raising
 * SIGBUS; every libelf result is checked.  maps itself is bounded in size,
 * line length and number of objects, and its parser takes any bytes.
 */
#define _GNU_SOURCE
#include "engine/ppt/pptfind.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "engine/target/procfs.h"
#include "common/hash.h"
#include "common/grow.h"

#define PF_MAPS_MAX (64u << 20)	 /* bytes of /proc/PID/maps */
#define PF_OBJECTS_MAX 4096u	 /* files mapped */
#define PF_HASH_SLOTS 8192u	 /* > 2 * PF_OBJECTS_MAX */
#define PF_RANGES_MAX 64u	 /* file mappings kept per object */
#define PF_FILE_MAX (1ull << 30) /* ELF file size */
#define PF_CAND_MAX (4u * PPTFIND_MAX_BUFFERS) /* (name, spelling) pairs */
#define PF_SHOWN_NAME 40 /* bytes of a bad name in a warning */

enum pf_kind { PF_HMEM, PF_STAT, PF_JSON, PF_KINDS };

static const char *const kind_word[PF_KINDS] = {"hmem", "stat", "json"};

struct pf_range {
	uint64_t start, offset;
};

struct pf_object {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	char *path;
	bool deleted, exec;
	uint64_t map_start, map_end; /* its first mapping (map_files) */
	struct pf_range *ranges;     /* in address order */
	size_t nranges, cap;
};

struct pf_sym {
	bool set;
	uint64_t addr, size;
	size_t rank; /* the defining object's place in binding order */
};

struct pf_cand {
	char name[PPTFIND_NAME_MAX];
	enum pptfind_spelling spelling;
	struct pf_sym sym[PF_KINDS];
};

struct pf_scan {
	pid_t pid;
	int dirfd; /* /proc/PID */
	uint64_t page;
	struct pf_object *obj; /* maps order */
	size_t nobj;
	int32_t hash[PF_HASH_SLOTS]; /* index into obj, or -1 */
	size_t *order;		     /* binding order: indexes into obj */
	struct pf_cand *cand;
	size_t ncand;
	struct pptfind_result *out;
};

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init(void)
{
	elf_version(EV_CURRENT);
}

/* Append one distinct message to the result's warning. */
static void warn(struct pf_scan *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(struct pf_scan *s, const char *fmt, ...)
{
	char msg[384];
	char *w = s->out->warning;
	size_t used = strlen(w), room = sizeof(s->out->warning);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strstr(w, msg) || (used >= 3 && !strcmp(w + used - 3, "...")))
		return; /* said already, or full */
	if (used + (used ? 2 : 0) + strlen(msg) + 1 <= room)
		snprintf(w + used, room - used, "%s%s", used ? "; " : "", msg);
	else if (used + 6 <= room)
		snprintf(w + used, room - used, "; ...");
}

/* ---- /proc/PID/maps: lines parsed by procfs_maps_line ---------------- */

static uint32_t object_hash(uint32_t major, uint32_t minor, uint64_t inode)
{
	uint64_t h =
		(inode ^ ((uint64_t)major << 40) ^ ((uint64_t)minor << 20)) *
		HASH_GOLDEN;

	return (uint32_t)(h >> 40) & (PF_HASH_SLOTS - 1);
}

/* The object of a file mapping, created on first sight; NULL when there are
 * too many objects already, or no memory. */
static struct pf_object *object_get(struct pf_scan *s,
				    const struct procfs_maps_line *m)
{
	uint32_t h = object_hash(m->dev_major, m->dev_minor, m->inode);
	struct pf_object *o;

	for (;; h = (h + 1) & (PF_HASH_SLOTS - 1)) {
		int32_t i = s->hash[h];

		if (i < 0)
			break;
		o = &s->obj[i];
		if (o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor && o->deleted == m->deleted &&
		    strlen(o->path) == m->path_len &&
		    !memcmp(o->path, m->path, m->path_len))
			return o;
	}
	if (s->nobj == PF_OBJECTS_MAX) {
		warn(s, "more than %u files mapped; the rest are not searched",
		     PF_OBJECTS_MAX);
		return NULL;
	}
	o = &s->obj[s->nobj];
	memset(o, 0, sizeof(*o));
	o->path = strndup(m->path, m->path_len);
	if (!o->path)
		return NULL;
	o->dev_major = m->dev_major;
	o->dev_minor = m->dev_minor;
	o->inode = m->inode;
	o->deleted = m->deleted;
	o->map_start = m->start;
	o->map_end = m->end;
	s->hash[h] = (int32_t)s->nobj++;
	return o;
}

static bool object_add_range(struct pf_object *o,
			     const struct procfs_maps_line *m)
{
	o->exec |= m->exec;
	if (o->nranges == PF_RANGES_MAX)
		return true; /* a bias needs only the first few */
	if (!grow_array_max((void **)&o->ranges, &o->cap, o->nranges + 1,
			    PF_RANGES_MAX, sizeof(*o->ranges)))
		return false;
	o->ranges[o->nranges].start = m->start;
	o->ranges[o->nranges].offset = m->offset;
	o->nranges++;
	return true;
}

/* Group the file mappings of maps into s->obj. */
static bool maps_group(struct pf_scan *s, const char *maps, size_t len)
{
	const char *end = maps + len;

	for (const char *line = maps; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		struct procfs_maps_line m;
		struct pf_object *o;
		bool ok = procfs_maps_line(line, (size_t)(eol - line), &m);

		line = nl ? nl + 1 : end;
		if (!ok || m.inode == 0 || m.path_len == 0 ||
		    m.path[0] != '/' || memchr(m.path, '\0', m.path_len))
			continue;
		o = object_get(s, &m);
		if (!o && s->nobj < PF_OBJECTS_MAX)
			return false; /* out of memory */
		if (o && !object_add_range(o, &m))
			return false;
	}
	return true;
}

/* ---- the ELF files ------------------------------------------------------- */

static bool same_file(const struct pf_object *o, int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_ino == o->inode &&
	       major(st.st_dev) == o->dev_major &&
	       minor(st.st_dev) == o->dev_minor;
}

/* The mapped file itself, open, or -1 (with a warning for code objects). */
static int object_open(struct pf_scan *s, const struct pf_object *o)
{
	char name[64];
	struct stat st;
	int fd = procfs_open_regular(AT_FDCWD, o->path);

	if (fd >= 0 && !same_file(o, fd)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64,
			 o->map_start, o->map_end);
		fd = procfs_open_regular(s->dirfd, name);
		if (fd >= 0 && !same_file(o, fd)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		if (o->exec)
			warn(s,
			     "skipped %s%s: the file at that path is not the "
			     "one mapped, and /proc/%d/map_files is not "
			     "readable (run as root to search it)",
			     o->path, o->deleted ? " (deleted)" : "",
			     (int)s->pid);
		return -1;
	}
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > PF_FILE_MAX) {
		if (o->exec)
			warn(s, "skipped %s: larger than 1 GiB", o->path);
		close(fd);
		return -1;
	}
	return fd;
}

/* The load bias of an ET_DYN object from its PT_LOAD headers. */
static bool object_bias(struct pf_scan *s, const struct pf_object *o, Elf *elf,
			uint64_t *bias)
{
	size_t phnum = 0;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum && i < 65536; i++) {
		GElf_Phdr ph;
		uint64_t want;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    ph.p_filesz == 0)
			continue;
		want = ph.p_offset & ~(s->page - 1);
		for (size_t k = 0; k < o->nranges; k++)
			if (o->ranges[k].offset == want) {
				*bias = o->ranges[k].start -
					(ph.p_vaddr & ~(s->page - 1));
				return true;
			}
	}
	return false;
}

/* The kind of a ppt symbol, its name and spelling; -1 if not one. */
static int ppt_symbol(const char *sym, const char **name, size_t *nlen,
		      enum pptfind_spelling *spelling)
{
	/* A symbol version ("_ppt_hmem_x@@VERS" in .symtab) is not part of
	 * the name. */
	size_t len = strcspn(sym, "@");

	for (int k = 0; k < PF_KINDS; k++) {
		if (len >= 10 && !memcmp(sym, "_ppt_", 5) &&
		    !memcmp(sym + 5, kind_word[k], 4) && sym[9] == '_') {
			*name = sym + 10;
			*nlen = len - 10;
			*spelling = PPTFIND_GENERATOR;
			return k;
		}
		if (len >= 11 && !memcmp(sym, "__ppt_", 6) &&
		    sym[len - 5] == '_' &&
		    !memcmp(sym + len - 4, kind_word[k], 4)) {
			*name = sym + 6;
			*nlen = len - 11;
			*spelling = PPTFIND_SPEC;
			return k;
		}
	}
	return -1;
}

/* A symbol name made printable, shortened, for a warning. */
static void shown(char *dst, size_t cap, const char *src, size_t len)
{
	size_t n = 0;

	for (; n < len && n < PF_SHOWN_NAME && n + 4 < cap; n++)
		dst[n] = src[n] > ' ' && src[n] < 127 ? src[n] : '?';
	if (n < len && n + 4 <= cap) {
		memcpy(dst + n, "...", 3);
		n += 3;
	}
	dst[n] = '\0';
}

static bool name_ok(struct pf_scan *s, const char *name, size_t nlen)
{
	char show[PF_SHOWN_NAME + 8];

	if (nlen == 0 || nlen >= PPTFIND_NAME_MAX) {
		shown(show, sizeof(show), name, nlen);
		warn(s, "skipped buffer \"%s\": a name is 1 to %d bytes", show,
		     PPTFIND_NAME_MAX - 1);
		return false;
	}
	for (size_t i = 0; i < nlen; i++) {
		char c = name[i];

		if (!(c == '_' || (c >= '0' && c <= '9') ||
		      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
			shown(show, sizeof(show), name, nlen);
			warn(s,
			     "skipped buffer \"%s\": a name is made of "
			     "[A-Za-z0-9_]",
			     show);
			return false;
		}
	}
	return true;
}

static void candidate_add(struct pf_scan *s, const char *name, size_t nlen,
			  enum pptfind_spelling spelling, int kind,
			  const GElf_Sym *sym, uint64_t bias, size_t rank)
{
	struct pf_cand *c = NULL;

	for (size_t i = 0; i < s->ncand; i++)
		if (s->cand[i].spelling == spelling &&
		    strlen(s->cand[i].name) == nlen &&
		    !memcmp(s->cand[i].name, name, nlen)) {
			c = &s->cand[i];
			break;
		}
	if (!c) {
		if (s->ncand == PF_CAND_MAX) {
			warn(s, "more than %u ppt names; the rest are ignored",
			     PF_CAND_MAX);
			return;
		}
		c = &s->cand[s->ncand++];
		memset(c, 0, sizeof(*c));
		memcpy(c->name, name, nlen);
		c->spelling = spelling;
	}
	if (c->sym[kind].set)
		return; /* bound already, by an object earlier in order */
	c->sym[kind].set = true;
	c->sym[kind].addr = bias + sym->st_value;
	c->sym[kind].size = sym->st_size;
	c->sym[kind].rank = rank;
}

static void symtab_scan(struct pf_scan *s, Elf *elf, Elf_Scn *scn,
			const GElf_Shdr *sh, uint64_t bias, size_t rank)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t ent = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t n;

	if (!data || !ent || data->d_type != ELF_T_SYM)
		return;
	n = data->d_size / ent;
	for (size_t i = 1; i < n && i <= INT_MAX; i++) {
		GElf_Sym sym;
		const char *str, *name;
		size_t nlen;
		enum pptfind_spelling spelling;
		int kind, type;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_OBJECT && type != STT_NOTYPE) ||
		    sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
		    sym.st_shndx == SHN_COMMON)
			continue;
		str = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!str || str[0] != '_' || (str[1] != 'p' && str[1] != '_'))
			continue;
		kind = ppt_symbol(str, &name, &nlen, &spelling);
		if (kind < 0 || !name_ok(s, name, nlen))
			continue;
		candidate_add(s, name, nlen, spelling, kind, &sym, bias, rank);
	}
}

/* The candidates one mapped file defines. */
static void object_scan(struct pf_scan *s, size_t rank)
{
	const struct pf_object *o = &s->obj[s->order[rank]];
	int fd = object_open(s, o);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	uint64_t bias = 0;

	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		goto out; /* not ELF: a font, a locale archive ... */
	if (eh.e_type == ET_DYN && !object_bias(s, o, elf, &bias)) {
		if (o->exec)
			warn(s,
			     "skipped %s: none of its PT_LOAD segments is "
			     "mapped where maps says",
			     o->path);
		goto out;
	}
	if (eh.e_type != ET_DYN && eh.e_type != ET_EXEC)
		goto out;
	s->out->objects++;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			symtab_scan(s, elf, scn, &sh, bias, rank);
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
}

/* Binding order: the executable (the file /proc/PID/exe is), then the
 * others in maps order. */
static bool binding_order(struct pf_scan *s)
{
	struct stat st;
	char exe[PATH_MAX];
	ssize_t n = readlinkat(s->dirfd, "exe", exe, sizeof(exe) - 1);
	size_t first = SIZE_MAX, k = 0;

	s->order = malloc((s->nobj ? s->nobj : 1) * sizeof(*s->order));
	if (!s->order)
		return false;
	exe[n > 0 ? n : 0] = '\0';
	if (fstatat(s->dirfd, "exe", &st, 0) == 0) {
		for (size_t i = 0; i < s->nobj && first == SIZE_MAX; i++)
			if (s->obj[i].inode == st.st_ino &&
			    s->obj[i].dev_major == major(st.st_dev) &&
			    s->obj[i].dev_minor == minor(st.st_dev))
				first = i;
	}
	for (size_t i = 0; i < s->nobj && first == SIZE_MAX && n > 0; i++)
		if (!strcmp(s->obj[i].path, exe))
			first = i;
	if (first != SIZE_MAX)
		s->order[k++] = first;
	for (size_t i = 0; i < s->nobj; i++)
		if (i != first)
			s->order[k++] = i;
	return true;
}

/* ---- the result ---------------------------------------------------------- */

static int buffer_cmp(const void *a, const void *b)
{
	const struct pptfind_buffer *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->spelling - (int)y->spelling;
}

static void symbol_name(char *dst, size_t cap, const struct pf_cand *c, int k)
{
	if (c->spelling == PPTFIND_GENERATOR)
		snprintf(dst, cap, "_ppt_%s_%s", kind_word[k], c->name);
	else
		snprintf(dst, cap, "__ppt_%s_%s", c->name, kind_word[k]);
}

static bool result_build(struct pf_scan *s)
{
	struct pptfind_result *r = s->out;
	size_t n = 0;

	r->buf = calloc(s->ncand ? s->ncand : 1, sizeof(*r->buf));
	if (!r->buf)
		return false;
	for (size_t i = 0; i < s->ncand; i++) {
		const struct pf_cand *c = &s->cand[i];
		struct pptfind_buffer *b;
		const struct pf_object *o;
		char have[256] = "", sym[PPTFIND_NAME_MAX + 16];

		for (int k = 0; k < PF_KINDS; k++) {
			if (!c->sym[k].set)
				continue;
			symbol_name(sym, sizeof(sym), c, k);
			snprintf(have + strlen(have),
				 sizeof(have) - strlen(have), "%s%s",
				 have[0] ? ", " : "", sym);
		}
		if (!c->sym[PF_HMEM].set || !c->sym[PF_STAT].set ||
		    !c->sym[PF_JSON].set) {
			warn(s, "skipped buffer %s: only %s defined", c->name,
			     have);
			continue;
		}
		if (n == PPTFIND_MAX_BUFFERS) {
			warn(s, "more than %d buffers; the rest are ignored",
			     PPTFIND_MAX_BUFFERS);
			break;
		}
		b = &r->buf[n++];
		snprintf(b->name, sizeof(b->name), "%s", c->name);
		b->spelling = c->spelling;
		b->hmem_addr = c->sym[PF_HMEM].addr;
		b->stat_addr = c->sym[PF_STAT].addr;
		b->json_addr = c->sym[PF_JSON].addr;
		b->hmem_size = c->sym[PF_HMEM].size;
		b->stat_size = c->sym[PF_STAT].size;
		b->json_size = c->sym[PF_JSON].size;
		/* The object that owns the buffer defines _json: the
		 * executable may hold copies of _hmem and _stat only. */
		o = &s->obj[s->order[c->sym[PF_JSON].rank]];
		snprintf(b->object, sizeof(b->object), "%s%s", o->path,
			 o->deleted ? " (deleted)" : "");
	}
	qsort(r->buf, n, sizeof(*r->buf), buffer_cmp);
	/* One buffer per name: both spellings of one name is a mistake. */
	for (size_t i = 1; i < n;) {
		if (strcmp(r->buf[i].name, r->buf[i - 1].name)) {
			i++;
			continue;
		}
		warn(s, "buffer %s is defined in both spellings; using _ppt_*",
		     r->buf[i].name);
		memmove(&r->buf[i], &r->buf[i + 1],
			(n - i - 1) * sizeof(*r->buf));
		n--;
	}
	r->n = n;
	if (!n) {
		free(r->buf);
		r->buf = NULL;
	}
	return true;
}

static void scan_finish(struct pf_scan *s)
{
	for (size_t i = 0; i < s->nobj; i++) {
		free(s->obj[i].path);
		free(s->obj[i].ranges);
	}
	free(s->obj);
	free(s->order);
	free(s->cand);
	if (s->dirfd >= 0)
		close(s->dirfd);
}

bool pptfind_scan(pid_t pid, struct pptfind_result *out, char *err,
		  size_t errlen)
{
	struct pf_scan s = {.pid = pid, .dirfd = -1, .out = out};
	char path[32];
	char *maps = NULL;
	size_t len = 0;
	long page = sysconf(_SC_PAGESIZE);
	bool ok = false;

	memset(out, 0, sizeof(*out));
	pthread_once(&elf_once, elf_init);
	s.page = page > 0 ? (uint64_t)page : 4096;
	memset(s.hash, 0xff, sizeof(s.hash));
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	s.dirfd = pid > 0 ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (s.dirfd < 0) {
		snprintf(err, errlen, "no such process %d; is it running?",
			 (int)pid);
		return false;
	}
	maps = procfs_slurp(s.dirfd, "maps", PF_MAPS_MAX, &len);
	if (!maps) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", (int)pid,
			 strerror(errno));
		goto out;
	}
	s.obj = malloc(PF_OBJECTS_MAX * sizeof(*s.obj));
	s.cand = malloc(PF_CAND_MAX * sizeof(*s.cand));
	if (!s.obj || !s.cand || !maps_group(&s, maps, len) ||
	    !binding_order(&s)) {
		snprintf(err, errlen, "out of memory reading /proc/%d/maps",
			 (int)pid);
		goto out;
	}
	for (size_t rank = 0; rank < s.nobj; rank++)
		object_scan(&s, rank);
	if (!result_build(&s)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	ok = true;
out:
	if (!ok)
		pptfind_result_finish(out);
	free(maps);
	scan_finish(&s);
	return ok;
}

void pptfind_result_finish(struct pptfind_result *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

#ifdef PPTFIND_TEST_HOOKS
bool pptfind_test_maps_line(const char *line, size_t len, uint64_t *start,
			    uint64_t *end, uint64_t *offset, uint64_t *inode,
			    char *path, size_t pathlen, bool *deleted);
/* maps_line_parse for the unit test: the fields, the path copied. */
bool pptfind_test_maps_line(const char *line, size_t len, uint64_t *start,
			    uint64_t *end, uint64_t *offset, uint64_t *inode,
			    char *path, size_t pathlen, bool *deleted)
{
	struct procfs_maps_line m;

	if (!procfs_maps_line(line, len, &m))
		return false;
	*start = m.start;
	*end = m.end;
	*offset = m.offset;
	*inode = m.inode;
	*deleted = m.deleted;
	snprintf(path, pathlen, "%.*s", (int)m.path_len, m.path);
	return true;
}
#endif
