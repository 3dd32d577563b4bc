/*
 * convert_cmd: `corotop convert --to FORMAT FILE [-o OUT]`, the command
 * line around convert.c.  See convert_cmd.c.
 */
#ifndef COROTOP_CONVERT_CMD_H
#define COROTOP_CONVERT_CMD_H

/* argv[0] is "convert".  Returns the exit status: 0 written (problems in
 * the trace are reported on stderr), 1 the trace could not be read or the
 * output written, 2 a usage error. */
int convert_cmd_main(int argc, char **argv);

#endif
