/*
 * makecontext_x86_64: the makecontext the program calls, on x86-64.
 *
 * glibc takes any number of arguments (each a 64-bit greg_t) and C cannot
 * forward a variable argument list.  The preload's C wrapper
 * (preload_makecontext_c) reads and replays at most CTX_MAX_ARGS of them;
 * a call with more comes here and goes to glibc's makecontext untouched:
 * the registers and the stack the program set up are restored exactly,
 * and the return address is still the program's (a tail jump).  That
 * context is left untraced, and preload_makecontext_many prints one note.
 *
 *   argc (edx) <= CTX_MAX_ARGS   jmp preload_makecontext_c
 *   argc > CTX_MAX_ARGS          save rax (the vector-register count of a
 *                                variadic call), rdi, rsi, rdx, rcx, r8, r9;
 *                                call preload_makecontext_many(argc), which
 *                                returns glibc's makecontext; restore them;
 *                                jmp to it through r11 (scratch, no
 *                                argument lives there)
 *
 * Seven pushes after the return address leave rsp 16-byte aligned for the
 * call, as the ABI wants.
 */
#define CTX_MAX_ARGS 32

	.text
	.globl	makecontext
	.type	makecontext, @function
	.p2align 4
makecontext:
	.cfi_startproc
	cmpl	$CTX_MAX_ARGS, %edx
	jg	1f
	jmp	preload_makecontext_c
1:
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	pushq	%r9
	.cfi_adjust_cfa_offset 8
	movl	%edx, %edi
	call	preload_makecontext_many
	movq	%rax, %r11
	popq	%r9
	.cfi_adjust_cfa_offset -8
	popq	%r8
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
	jmp	*%r11
	.cfi_endproc
	.size	makecontext, .-makecontext

	.section .note.GNU-stack, "", @progbits
