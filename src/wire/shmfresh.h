/*
 * shmfresh: attach a SysV shared memory segment at an address the kernel
 * picks, with ThreadSanitizer told that the range is new.
 *
 * TSan does not intercept shmat, so the shadow of the range keeps whatever
 * it last recorded there -- for example the TLS set-up of a thread whose
 * stack glibc has since unmapped -- and reports the first atomic access of
 * the segment against that dead thread.  Under TSan the range is first
 * reserved with mmap while this thread's writes are ignored (the mmap
 * interceptor then resets the range's history, as the kernel does), and the
 * segment is attached over the reservation with SHM_REMAP.  Other builds
 * call plain shmat: the kernel's behaviour is the same either way.
 */
#ifndef COROTOP_SHMFRESH_H
#define COROTOP_SHMFRESH_H

#include <stddef.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define SHMFRESH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHMFRESH_TSAN 1
#endif
#endif

#ifdef SHMFRESH_TSAN
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#endif

/* shmat(id, NULL, flags) for a segment of size bytes; (void *)-1 and
 * errno as shmat on failure. */
static inline void *shm_attach_fresh(int id, size_t size, int flags)
{
#ifdef SHMFRESH_TSAN
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (size + pg - 1) / pg * pg;
	void *hint;

	AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
	hint = mmap(NULL, len, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
	if (hint != MAP_FAILED) {
		void *p = shmat(id, hint, flags | SHM_REMAP);

		if (p != (void *)-1)
			return p;
		munmap(hint, len);
	}
#else
	(void)size;
#endif
	return shmat(id, NULL, flags);
}

#endif
