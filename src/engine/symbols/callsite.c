/*
 * callsite: the program's line that led into code inlined from another
 * file.
 *
 * Why.  A return address in the program's function often lies in code a
 * library's header inlined there: Boost's condition_variable::wait inlined
 * into stuck_wait_for_signal has its line in condition_variable.hpp:96.
 * People look for the program's line, the one that called wait.
 *
 * How.  The compile unit at the address, and the scopes around the
 * address: dwarf_getscopes for the innermost, then dwarf_getscopes_die
 * for every scope around that one (dwarf_getscopes alone stops short of
 * the inlined instances that enclose it).  The innermost
 * DW_TAG_inlined_subroutine whose DW_AT_call_file is the unit's own file
 * gives the line (DW_AT_call_line).  Files are compared by basename.
 * Every value read from DWARF is bounded (file index, line).
 */
#include "engine/symbols/callsite.h"

#include <dwarf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char *callsite_base(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path;
}

/* The innermost scope, then every scope around it; n, or <= 0. */
static int callsite_scopes(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	int n = dwarf_getscopes(cu, pc, scopes);

	if (n > 0) {
		Dwarf_Die inner = (*scopes)[0];

		free(*scopes);
		*scopes = NULL;
		n = dwarf_getscopes_die(&inner, scopes);
	}
	return n;
}

bool callsite_in_unit(Dwfl_Module *mod, uint64_t addr, const char *base,
		      const char **file, int *line)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
	Dwarf_Die *scopes = NULL;
	Dwarf_Files *files;
	size_t nfiles;
	const char *unit = callsite_base(cu ? dwarf_diename(cu) : NULL);
	bool found = false;
	int n;

	if (!unit || !base || !strcmp(unit, base) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		return false;
	n = callsite_scopes(cu, addr - bias, &scopes);
	for (int i = 0; i < n && !found; i++) {
		Dwarf_Attribute a;
		Dwarf_Word f, at;
		const char *from;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine ||
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a),
				    &f) != 0 ||
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a),
				    &at) != 0 ||
		    f >= nfiles || !at || at > INT_MAX)
			continue;
		from = callsite_base(dwarf_filesrc(files, f, NULL, NULL));
		if (from && !strcmp(from, unit)) {
			*file = unit;
			*line = (int)at;
			found = true;
		}
	}
	free(scopes);
	return found;
}
