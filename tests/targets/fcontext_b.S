/*
 * fcontext_b: a second build of Boost.Context's fcontext interface for
 * x86-64 (make_fcontext, jump_fcontext, ontop_fcontext), written here from
 * the calling convention Boost's own follows, so that a test has two
 * different libboost_context objects in one process (libtest-fcontext-b,
 * its own soname, beside Debian's libboost_context): a plugin linked to
 * this one must have its calls forwarded here, and `fcontext_b_jumps`
 * counts them.
 *
 * A suspended context's fcontext_t is its stack pointer; at it, from low to
 * high: r12, r13, r14, r15, rbx, rbp, then the address to go on at.  A
 * switch returns transfer_t {the fcontext_t of the context that switched,
 * the data it passed} in rax:rdx, and hands the same pair to a context's
 * entry in rdi:rsi.  (The floating-point control words are not kept: the
 * tests that use this do not change them.)
 *
 *   make_fcontext(sp, size, fn)   a context that runs fn(transfer_t) on
 *                                 the stack below sp; if fn returns, the
 *                                 process ends with _exit(0), as Boost's
 *   jump_fcontext(to, data)       suspend here, resume `to`
 *   ontop_fcontext(to, data, fn)  suspend here, resume `to` and run fn on
 *                                 top of it first; what fn returns is what
 *                                 `to`'s switch returns
 */
	.text

	.globl	make_fcontext
	.type	make_fcontext, @function
make_fcontext:
	movq	%rdi, %rax
	andq	$-16, %rax
	/* fctx = 8 (mod 16), as a suspended switch's is: the entry's call
	 * and an ontop function then start with the stack the ABI wants. */
	leaq	-72(%rax), %rax
	movq	%rdx, 0(%rax)		/* fn, in the r12 slot */
	leaq	fcontext_b_start(%rip), %rcx
	movq	%rcx, 48(%rax)
	ret
	.size	make_fcontext, .-make_fcontext

	/* A new context's first instructions: rax:rdx is the transfer_t
	 * (a jump or an ontop function's result), r12 the entry. */
fcontext_b_start:
	movq	%rax, %rdi
	movq	%rdx, %rsi
	call	*%r12
	xorl	%edi, %edi
	call	_exit@PLT
	hlt

	.globl	jump_fcontext
	.type	jump_fcontext, @function
jump_fcontext:
	lock incq fcb_jumps(%rip)
	pushq	%rbp
	pushq	%rbx
	pushq	%r15
	pushq	%r14
	pushq	%r13
	pushq	%r12
	movq	%rsp, %rax
	movq	%rdi, %rsp
	popq	%r12
	popq	%r13
	popq	%r14
	popq	%r15
	popq	%rbx
	popq	%rbp
	popq	%r8
	movq	%rsi, %rdx
	movq	%rax, %rdi
	jmp	*%r8
	.size	jump_fcontext, .-jump_fcontext

	.globl	ontop_fcontext
	.type	ontop_fcontext, @function
ontop_fcontext:
	lock incq fcb_jumps(%rip)
	pushq	%rbp
	pushq	%rbx
	pushq	%r15
	pushq	%r14
	pushq	%r13
	pushq	%r12
	movq	%rsp, %rax
	movq	%rdi, %rsp
	popq	%r12
	popq	%r13
	popq	%r14
	popq	%r15
	popq	%rbx
	popq	%rbp
	/* The resumed context's address stays on its stack: fn returns
	 * there, with its transfer_t in rax:rdx. */
	movq	%rdx, %r8
	movq	%rsi, %rdx
	movq	%rax, %rdi
	jmp	*%r8
	.size	ontop_fcontext, .-ontop_fcontext

	.data
	.globl	fcontext_b_jumps
	.type	fcontext_b_jumps, @object
	.p2align 3
fcontext_b_jumps:
fcb_jumps:			/* the same word, bound locally */
	.quad	0
	.size	fcontext_b_jumps, 8

	.section .note.GNU-stack, "", @progbits
