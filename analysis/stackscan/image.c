/* Loading the file to scan: gzip, ELF (vmlinux, modules, objects), raw
 * arm64 Image; function bounds from the ELF symbol table or a System.map. */
#include "image.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, ERRLEN, fmt, ap);
	va_end(ap);
	return -1;
}

static int read_file(const char *path, uint8_t **buf, size_t *len, char *err)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 20, n = 0, got;
	uint8_t *b;

	if (!f)
		return fail(err, "%s: %s", path, strerror(errno));
	b = malloc(cap);
	while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(b, cap *= 2);

			if (!nb)
				free(b);
			b = nb;
		}
	}
	if (!b) {
		fclose(f);
		return fail(err, "%s: out of memory", path);
	}
	if (ferror(f)) {
		free(b);
		fclose(f);
		return fail(err, "%s: read error", path);
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

/* Debian ships vmlinuz gzip-compressed; inflate it in memory. */
static int gunzip(const char *path, uint8_t **buf, size_t *len, char *err)
{
	z_stream zs = { 0 };
	size_t cap = *len * 4 + (1 << 20);
	uint8_t *out = malloc(cap);
	int rc;

	if (!out)
		return fail(err, "%s: out of memory", path);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return fail(err, "%s: zlib inflateInit2 failed", path);
	}
	zs.next_in = *buf;
	zs.avail_in = *len;
	do {
		if (zs.total_out == cap) {
			uint8_t *nb = realloc(out, cap *= 2);

			if (!nb) {
				rc = Z_MEM_ERROR;
				break;
			}
			out = nb;
		}
		zs.next_out = out + zs.total_out;
		zs.avail_out = cap - zs.total_out;
		rc = inflate(&zs, Z_NO_FLUSH);
	} while (rc == Z_OK);
	inflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		free(out);
		return fail(err, "%s: gzip data is corrupt or truncated (zlib %d)",
			    path, rc);
	}
	free(*buf);
	*buf = out;
	*len = zs.total_out;
	return 0;
}

static int add_region(struct image *img, const char *name, uint64_t addr,
		      const uint8_t *data, uint64_t size, char *err)
{
	struct region *r = realloc(img->regions,
				   (img->nregions + 1) * sizeof(*r));

	if (!r)
		return fail(err, "out of memory");
	img->regions = r;
	r += img->nregions++;
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->addr = addr;
	r->data = data;
	r->size = size;
	return 0;
}

static int add_func(struct image *img, const char *name, size_t region,
		    uint64_t start, uint64_t end, size_t *cap, char *err)
{
	if (img->nfuncs == *cap) {
		struct func *f;

		*cap = *cap ? *cap * 2 : 1024;
		f = realloc(img->funcs, *cap * sizeof(*f));
		if (!f)
			return fail(err, "out of memory");
		img->funcs = f;
	}
	img->funcs[img->nfuncs++] = (struct func){ name, region, start, end, 0 };
	return 0;
}

static int func_cmp(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	if (x->region != y->region)
		return x->region < y->region ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* Sorted, and aliases (several names at one address) scanned once. */
static void sort_funcs(struct image *img)
{
	size_t i, n = 0;

	qsort(img->funcs, img->nfuncs, sizeof(*img->funcs), func_cmp);
	for (i = 0; i < img->nfuncs; i++)
		if (!n || func_cmp(&img->funcs[n - 1], &img->funcs[i]))
			img->funcs[n++] = img->funcs[i];
	img->nfuncs = n;
}

struct elf {
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const char *shstr;
	/* region index of each section, or -1 */
	long *region_of;
};

static int elf_open(struct image *img, const char *path, struct elf *e,
		    char *err)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img->buf;
	const Elf64_Shdr *strsec;
	size_t i;

	if (img->buf[EI_CLASS] != ELFCLASS64 || img->buf[EI_DATA] != ELFDATA2LSB)
		return fail(err, "%s: not a 64-bit little-endian ELF file", path);
	if (img->len < sizeof(*eh) || eh->e_machine != EM_AARCH64)
		return fail(err, "%s: not an aarch64 ELF file (e_machine %u)",
			    path, img->len < sizeof(*eh) ? 0 : eh->e_machine);
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > img->len ||
	    eh->e_shnum > (img->len - eh->e_shoff) / sizeof(Elf64_Shdr) ||
	    eh->e_shstrndx >= eh->e_shnum)
		return fail(err, "%s: bad ELF section header table", path);
	e->eh = eh;
	e->sh = (const Elf64_Shdr *)(img->buf + eh->e_shoff);
	strsec = &e->sh[eh->e_shstrndx];
	if (strsec->sh_offset > img->len ||
	    strsec->sh_size > img->len - strsec->sh_offset)
		return fail(err, "%s: bad ELF section name table", path);
	e->shstr = (const char *)img->buf + strsec->sh_offset;
	e->region_of = malloc(eh->e_shnum * sizeof(long));
	if (!e->region_of)
		return fail(err, "out of memory");
	img->kind = eh->e_type == ET_REL ? "object" : "vmlinux";
	for (i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *s = &e->sh[i];
		const char *name = s->sh_name < strsec->sh_size ?
				   e->shstr + s->sh_name : "?";

		e->region_of[i] = -1;
		if (!strcmp(name, ".modinfo") || !strcmp(name, ".gnu.linkonce.this_module"))
			img->kind = "module";
		if (s->sh_type != SHT_PROGBITS || !(s->sh_flags & SHF_EXECINSTR) ||
		    !s->sh_size)
			continue;
		if (s->sh_offset > img->len || s->sh_size > img->len - s->sh_offset)
			return fail(err, "%s: section %s lies outside the file",
				    path, name);
		e->region_of[i] = img->nregions;
		if (add_region(img, name, eh->e_type == ET_REL ? 0 : s->sh_addr,
			       img->buf + s->sh_offset, s->sh_size, err))
			return -1;
	}
	if (!img->nregions)
		return fail(err, "%s: no executable sections", path);
	return 0;
}

static int add_mark(struct region *r, uint64_t addr, int is_data, char *err)
{
	struct mark *m = realloc(r->marks, (r->nmarks + 1) * sizeof(*m));

	if (!m)
		return fail(err, "out of memory");
	r->marks = m;
	m[r->nmarks++] = (struct mark){ addr, is_data };
	return 0;
}

static int mark_cmp(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int elf_symbols(struct image *img, const char *path, struct elf *e,
		       char *err)
{
	const Elf64_Shdr *symsec = NULL, *strsec;
	const Elf64_Sym *syms;
	const char *strs;
	size_t i, n, cap = 0;

	for (i = 0; i < e->eh->e_shnum; i++)
		if (e->sh[i].sh_type == SHT_SYMTAB)
			symsec = &e->sh[i];
	if (!symsec)
		return fail(err, "%s: no symbol table (stripped); give --system-map",
			    path);
	if (symsec->sh_link >= e->eh->e_shnum || symsec->sh_offset > img->len ||
	    symsec->sh_size > img->len - symsec->sh_offset)
		return fail(err, "%s: bad symbol table", path);
	strsec = &e->sh[symsec->sh_link];
	if (strsec->sh_offset > img->len ||
	    strsec->sh_size > img->len - strsec->sh_offset || !strsec->sh_size)
		return fail(err, "%s: bad symbol string table", path);
	syms = (const Elf64_Sym *)(img->buf + symsec->sh_offset);
	strs = (const char *)img->buf + strsec->sh_offset;
	n = symsec->sh_size / sizeof(*syms);
	if (strs[strsec->sh_size - 1])
		return fail(err, "%s: symbol string table is not terminated", path);
	for (i = 1; i < n; i++) {
		const Elf64_Sym *s = &syms[i];
		const char *name = s->st_name < strsec->sh_size ?
				   strs + s->st_name : "?";
		int type = ELF64_ST_TYPE(s->st_info);
		struct region *r;
		long ri;

		if (s->st_shndx >= e->eh->e_shnum ||
		    (ri = e->region_of[s->st_shndx]) < 0)
			continue;
		r = &img->regions[ri];
		if (s->st_value < r->addr || s->st_value - r->addr > r->size)
			continue;
		if (type == STT_NOTYPE && name[0] == '$' &&
		    (name[1] == 'x' || name[1] == 'd') &&
		    (name[2] == 0 || name[2] == '.')) {
			if (add_mark(r, s->st_value, name[1] == 'd', err))
				return -1;
			continue;
		}
		/* Assembly marks code with SYM_CODE_* as NOTYPE with a size. */
		if ((type != STT_FUNC && type != STT_NOTYPE) || !s->st_size ||
		    s->st_size > r->addr + r->size - s->st_value)
			continue;
		if (add_func(img, name, ri, s->st_value, s->st_value + s->st_size,
			     &cap, err))
			return -1;
	}
	for (i = 0; i < img->nregions; i++)
		qsort(img->regions[i].marks, img->regions[i].nmarks,
		      sizeof(struct mark), mark_cmp);
	if (!img->nfuncs)
		return fail(err, "%s: the symbol table names no functions", path);
	return 0;
}

struct mapsym {
	uint64_t addr;
	char type;
	const char *name;
};

static int mapsym_cmp(const void *a, const void *b)
{
	const struct mapsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int is_text_type(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/* System.map ("ADDR TYPE NAME" per line): a text symbol runs to the next
 * symbol of any kind, so that code never runs on into data. */
static int sysmap_symbols(struct image *img, const char *path, char *err)
{
	uint8_t *text;
	size_t len, i, n = 0, cap = 0, fcap = 0;
	struct mapsym *syms = NULL;
	char *line, *save = NULL;
	int rc = -1;

	if (read_file(path, &text, &len, err))
		return -1;
	img->strings = realloc(text, len + 1);
	if (!img->strings) {
		free(text);
		return fail(err, "out of memory");
	}
	img->strings[len] = 0;
	for (line = strtok_r(img->strings, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *end, *name;
		uint64_t addr = strtoull(line, &end, 16);

		if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ' ||
		    !end[3]) {
			fail(err, "%s: not a System.map line: \"%.60s\"", path, line);
			goto out;
		}
		name = end + 3;
		if (n == cap) {
			struct mapsym *ns = realloc(syms, (cap = cap ? cap * 2 : 4096)
						    * sizeof(*syms));
			if (!ns) {
				fail(err, "out of memory");
				goto out;
			}
			syms = ns;
		}
		syms[n++] = (struct mapsym){ addr, end[1], name };
	}
	qsort(syms, n, sizeof(*syms), mapsym_cmp);
	for (i = 0; i < n; i++) {
		uint64_t next = UINT64_MAX;
		size_t j, ri;

		if (!is_text_type(syms[i].type))
			continue;
		for (j = i + 1; j < n && next == UINT64_MAX; j++)
			if (syms[j].addr > syms[i].addr)
				next = syms[j].addr;
		for (ri = 0; ri < img->nregions; ri++) {
			const struct region *r = &img->regions[ri];

			if (syms[i].addr >= r->addr &&
			    syms[i].addr < r->addr + r->size)
				break;
		}
		if (ri == img->nregions)
			continue;
		if (next > img->regions[ri].addr + img->regions[ri].size)
			next = img->regions[ri].addr + img->regions[ri].size;
		if (add_func(img, syms[i].name, ri, syms[i].addr, next, &fcap, err))
			goto out;
		img->funcs[img->nfuncs - 1].maybe_continues = 1;
	}
	if (!img->nfuncs) {
		fail(err, "%s: no text symbols inside the image (an empty placeholder, "
		     "or the map of another kernel?)", path);
		goto out;
	}
	rc = 0;
out:
	free(syms);
	return rc;
}

/* A raw Image is vmlinux's image from _text on; System.map places it. */
static int raw_image(struct image *img, const char *path, const char *sysmap,
		     char *err)
{
	uint8_t *text;
	size_t len;
	char *p;
	uint64_t base = 0;
	int found = 0;

	img->kind = "Image";
	if (!sysmap)
		return fail(err, "%s: a raw arm64 Image has no symbols; give "
			    "--system-map", path);
	if (read_file(sysmap, &text, &len, err))
		return -1;
	for (p = (char *)text; p < (char *)text + len; p++) {
		if (!strncmp(p, " T _text\n", 9) || !strncmp(p, " t _text\n", 9)) {
			char *q = p;

			while (q > (char *)text && q[-1] != '\n')
				q--;
			base = strtoull(q, NULL, 16);
			found = 1;
			break;
		}
	}
	free(text);
	if (!found)
		return fail(err, "%s: no _text symbol to place the Image by (an "
			    "empty placeholder System.map?)", sysmap);
	return add_region(img, "Image", base, img->buf, img->len, err);
}

int image_load(struct image *img, const char *path, const char *sysmap,
	       char *err)
{
	memset(img, 0, sizeof(*img));
	if (read_file(path, &img->buf, &img->len, err))
		return -1;
	if (img->len >= 2 && img->buf[0] == 0x1f && img->buf[1] == 0x8b &&
	    gunzip(path, &img->buf, &img->len, err))
		return -1;
	if (img->len >= 64 && !memcmp(img->buf, ELFMAG, SELFMAG)) {
		struct elf e = { 0 };
		int rc = elf_open(img, path, &e, err);

		if (!rc)
			rc = sysmap ? sysmap_symbols(img, sysmap, err)
				    : elf_symbols(img, path, &e, err);
		free(e.region_of);
		if (rc)
			return -1;
	} else if (img->len >= 64 && !memcmp(img->buf + 56, "ARM\x64", 4)) {
		if (raw_image(img, path, sysmap, err) ||
		    sysmap_symbols(img, sysmap, err))
			return -1;
	} else {
		return fail(err, "%s: not an ELF file or arm64 Image", path);
	}
	sort_funcs(img);
	return 0;
}

void image_free(struct image *img)
{
	size_t i;

	for (i = 0; i < img->nregions; i++) {
		free(img->regions[i].marks);
	}
	free(img->regions);
	free(img->funcs);
	free(img->strings);
	free(img->buf);
}
