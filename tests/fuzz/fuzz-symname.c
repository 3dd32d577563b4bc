/*
 * fuzz-symname: symbol names as a hostile target's ELF files can spell
 * them, through symname_format (libiberty's demanglers, the coroutine
 * rewrite, the shortening) and symname_function_len.
 *
 * The first byte chooses: bits 0-1 the form -- the rest of the input as
 * the name itself (0), or each byte one token of C++ (1: "_Z", 2: "_ZN")
 * or Rust (3: "_R") mangling, so that random bytes make names the
 * demanglers parse deep into -- and bit 2 a small output buffer (1 to 32
 * bytes, from bits 3-7) instead of a large one.  Names go up to a little
 * past SYMNAME_MANGLED_MAX.  Nothing may crash, hang or write past the
 * buffer, and:
 *   - the length returned is that of the text written, below the buffer's
 *     size and at most SYMNAME_MAX;
 *   - symname_function_len of any text is at most its length.
 * A demangling that grows exponentially must stop (regress/symname/ holds
 * two, C++ and Rust v0, that print gigabytes unstopped).
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/names/symname.h"

#define FUZZ_NAME_MAX (SYMNAME_MANGLED_MAX + 64)
#define FUZZ_CANARY 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Pieces of Itanium C++ mangling, GCC's coroutine parts and clones. */
static const char *const fuzz_cxx[] = {
	"1a",
	"3foo",
	"St",
	"Sa",
	"S_",
	"S0_",
	"S1_",
	"SA_",
	"T_",
	"T0_",
	"I",
	"E",
	"N",
	"K",
	"R",
	"O",
	"P",
	"F",
	"v",
	"i",
	"c",
	"d",
	"l",
	"m",
	"Dp",
	"Z",
	"L",
	"_",
	"C1",
	"C2",
	"D0",
	"D1",
	"cl",
	"ls",
	"lt",
	"pl",
	"Ul",
	"Ut_",
	"UlvE_",
	"J",
	"X",
	"sr",
	"Dt",
	"dt",
	"pt",
	"A10_",
	"M",
	"Tn",
	"Th8_",
	"GV",
	"TV",
	"12_GLOBAL__N_1",
	".actor",
	".resume",
	".destroy",
	".cleanup",
	".cold",
	".isra.0",
	"EPZ",
	"20_ZN2ns5plainEi.Frame",
	".Frame",
	"@@GLIBC_2.2.5",
	"St6vectorIiSaIiEE",
	"9push_back",
	"0",
	"9",
	"E.llvm.123",
};

/* Pieces of Rust's v0 and legacy manglings. */
static const char *const fuzz_rust[] = {
	"Nv",	      "Nt",
	"NC",	      "C",
	"Cs1234_",    "M",
	"X",	      "Y",
	"I",	      "E",
	"B_",	      "B2_",
	"B8_",	      "T",
	"u",	      "h",
	"m",	      "a",
	"s",	      "K",
	"p",	      "j1_",
	"3foo",	      "1m",
	"u5_caf_dma", "17h0123456789abcdef",
	"$LT$",	      "$GT$",
	"..",	      "$u7b$",
	"G0_",	      "F",
	"Kc",	      "R",
	"Q",	      "O",
	"S",	      "A",
	"D",	      "L_",
	"0",	      "_",
	"x",	      "Nt5alloc",
	"Cs_",	      ".llvm.7",
};

static size_t fuzz_name(const uint8_t *data, size_t size, char *name)
{
	static const char *const prefix[] = {"", "_Z", "_ZN", "_R"};
	unsigned form = data[0] & 3;
	size_t len = strlen(prefix[form]);

	memcpy(name, prefix[form], len);
	for (size_t i = 1; i < size && len < FUZZ_NAME_MAX; i++) {
		const char *t;
		size_t tl;

		if (!form) {
			name[len++] = (char)data[i];
			continue;
		}
		t = form < 3 ? fuzz_cxx[data[i] % (sizeof(fuzz_cxx) /
						   sizeof(fuzz_cxx[0]))]
			     : fuzz_rust[data[i] % (sizeof(fuzz_rust) /
						    sizeof(fuzz_rust[0]))];
		tl = strlen(t);
		if (len + tl > FUZZ_NAME_MAX)
			break;
		memcpy(name + len, t, tl);
		len += tl;
	}
	name[len] = '\0';
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[FUZZ_NAME_MAX + 1];
	char out[256 + FUZZ_CANARY];
	size_t len, n, got;

	if (!size)
		return 0;
	len = fuzz_name(data, size, name);
	n = data[0] & 4 ? 1 + (data[0] >> 3) : 256;
	memset(out, 0x5a, sizeof(out));
	got = symname_format(name, len, out, n);
	if (got >= n || got > SYMNAME_MAX || out[got] != '\0' ||
	    strlen(out) != got)
		abort();
	for (size_t i = n; i < sizeof(out); i++)
		if (out[i] != 0x5a)
			abort();
	if (symname_function_len(out) > got)
		abort();
	/* the raw name may hold NULs: only its first string */
	if (symname_function_len(name) > strlen(name))
		abort();
	return 0;
}
