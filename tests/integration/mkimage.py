#!/usr/bin/env python3
"""mkimage.py KIND OUT [ARGS]: container images for the image tests, made
locally from nothing but the standard library (images_lib.sh calls it and
caches what it makes).  Every tar is written entry by entry with exact
owners, modes, link targets and names, so no root is needed and hostile
names come out as they are; mtimes are fixed, so the same inputs give the
same digests.

Kinds (OUT is a directory for an OCI layout, a file for an archive):
  three OUT BUSYBOX          three layers: busybox and users; a setuid file,
                             a hard link, a symlink, a file of uid 1000;
                             a whiteout and an opaque directory; User app
  busybox OUT BUSYBOX        static busybox and /bin/sh, nothing else
  docker-busybox OUT BUSYBOX the same as `docker save` writes it
  debian OUT ROOTFS.tar      oci-archive: the tar as its layer, /srv/app on
                             top, Env GREETING=hello, WorkingDir /srv/app
  hostile-escape OUT         '../../cove-escape'
  hostile-abs OUT            '/cove-abs'
  hostile-symlink OUT        'cove-lnk' -> /tmp, then 'cove-lnk/cove-owned'
  hostile-hardlink OUT       'cove-shadow' hard link to /etc/shadow
  hostile-many OUT           a million empty files (gzip)
  hostile-sparse OUT         'cove-huge': 10 GiB, sparse (4 KiB of data)
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

MTIME = 1700000000
MT_TAR = "application/vnd.oci.image.layer.v1.tar"
MT_GZIP = MT_TAR + "+gzip"
MT_ZSTD = MT_TAR + "+zstd"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Layer:
    """One layer's tar, written to a temporary file."""

    count = 0

    def __init__(self, tmp):
        Layer.count += 1
        self.path = os.path.join(tmp, "layer-%d.tar" % Layer.count)
        self.f = open(self.path, "wb")
        self.tar = tarfile.open(fileobj=self.f, mode="w", format=tarfile.PAX_FORMAT)

    def _info(self, name, kind, mode, uid, gid):
        ti = tarfile.TarInfo(name)
        ti.type = kind
        ti.mode = mode
        ti.uid, ti.gid = uid, gid
        ti.uname = ti.gname = ""
        ti.mtime = MTIME
        return ti

    def dir(self, name, mode=0o755, uid=0, gid=0):
        self.tar.addfile(self._info(name, tarfile.DIRTYPE, mode, uid, gid))

    def file(self, name, data=b"", mode=0o644, uid=0, gid=0):
        ti = self._info(name, tarfile.REGTYPE, mode, uid, gid)
        ti.size = len(data)
        self.tar.addfile(ti, io.BytesIO(data))

    def symlink(self, name, target):
        ti = self._info(name, tarfile.SYMTYPE, 0o777, 0, 0)
        ti.linkname = target
        self.tar.addfile(ti)

    def hardlink(self, name, target):
        ti = self._info(name, tarfile.LNKTYPE, 0o644, 0, 0)
        ti.linkname = target
        self.tar.addfile(ti)

    def close(self, comp="tar"):
        """Finishes the tar and compresses it: (path, media type, diff_id)."""
        self.tar.close()
        self.f.close()
        diff_id = sha256_file(self.path)
        if comp == "gzip":
            out = self.path + ".gz"
            with open(self.path, "rb") as src, open(out, "wb") as raw:
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
                    shutil.copyfileobj(src, gz, 1 << 20)
            os.unlink(self.path)
            return out, MT_GZIP, diff_id
        if comp == "zstd":
            subprocess.run(["zstd", "-q", "-3", "--rm", "-o", self.path + ".zst", self.path],
                           check=True)
            return self.path + ".zst", MT_ZSTD, diff_id
        return self.path, MT_TAR, diff_id


def config_json(diff_ids, env=None, workdir="", user="", cmd=None):
    cfg = {"Env": env or [PATH_ENV]}
    if workdir:
        cfg["WorkingDir"] = workdir
    if user:
        cfg["User"] = user
    if cmd:
        cfg["Cmd"] = cmd
    doc = {
        "architecture": "amd64",
        "os": "linux",
        "created": "2023-11-14T22:13:20Z",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in diff_ids]},
        "history": [{"created": "2023-11-14T22:13:20Z", "created_by": "tests/integration/mkimage.py"} for _ in diff_ids],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


class Blobs:
    """An OCI image layout under root: blobs/sha256/HEX, index.json."""

    def __init__(self, root):
        self.root = root
        os.makedirs(os.path.join(root, "blobs", "sha256"))

    def put_file(self, path):
        hexd = sha256_file(path)
        size = os.path.getsize(path)
        shutil.move(path, os.path.join(self.root, "blobs", "sha256", hexd))
        return hexd, size

    def put_bytes(self, data):
        hexd = hashlib.sha256(data).hexdigest()
        with open(os.path.join(self.root, "blobs", "sha256", hexd), "wb") as f:
            f.write(data)
        return hexd, len(data)


def write_oci(root, layers, cfg_args, tag="latest"):
    """layers: [(path, media type, diff_id)] from Layer.close, bottom first."""
    b = Blobs(root)
    descs = []
    for path, mt, _ in layers:
        hexd, size = b.put_file(path)
        descs.append({"mediaType": mt, "digest": "sha256:" + hexd, "size": size})
    chex, csize = b.put_bytes(config_json([d for _, _, d in layers], **cfg_args))
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + chex, "size": csize},
        "layers": descs,
    }
    mhex, msize = b.put_bytes(json.dumps(manifest, sort_keys=True).encode())
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": "sha256:" + mhex, "size": msize,
                       "annotations": {"org.opencontainers.image.ref.name": tag}}],
    }
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump(index, f, sort_keys=True)
    with open(os.path.join(root, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    return "sha256:" + mhex


def archive_dir(root, out):
    """A tar of the directory root (its contents at the top), fixed metadata."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                full = os.path.join(dirpath, name)
                ti = t.gettarinfo(full, os.path.relpath(full, root))
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                ti.mtime = MTIME
                if ti.isreg():
                    with open(full, "rb") as f:
                        t.addfile(ti, f)
                else:
                    t.addfile(ti)


def busybox_layer(tmp, busybox, applets):
    """/bin/busybox, /bin/sh and the given applets as links to it."""
    lay = Layer(tmp)
    lay.dir("bin")
    with open(busybox, "rb") as f:
        lay.file("bin/busybox", f.read(), 0o755)
    lay.symlink("bin/sh", "busybox")
    for a in applets:
        if a not in ("sh", "busybox"):
            lay.symlink("bin/" + a, "/bin/busybox")
    return lay


def applets_of(busybox):
    out = subprocess.run([busybox, "--list"], check=True, capture_output=True, text=True)
    return sorted(a for a in out.stdout.split() if a and "/" not in a)


def make_three(out, busybox, tmp):
    # Layer 1 (gzip): busybox with all its applets, users, the lower files.
    lay = busybox_layer(tmp, busybox, applets_of(busybox))
    for d in ("dev", "proc", "sys", "run", "etc", "home", "data", "opq", "opq/sub"):
        lay.dir(d)
    lay.dir("tmp", 0o1777)
    lay.dir("root", 0o700)
    lay.dir("home/app", 0o755, 1000, 1000)
    lay.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n")
    lay.file("etc/group", b"root:x:0:\napp:x:1000:\n")
    lay.file("data/gone", b"gone\n")
    lay.file("data/keep", b"keep\n")
    lay.file("opq/lower-a", b"a\n")
    lay.file("opq/sub/lower-b", b"b\n")
    l1 = lay.close("gzip")
    # Layer 2 (plain tar): setuid, hard link, symlink, a file of uid 1000.
    lay = Layer(tmp)
    lay.file("usr/local/bin/suid", b"#!/bin/sh\necho suid\n", 0o4755)
    lay.file("data/hard1", b"hard\n")
    lay.hardlink("data/hard2", "data/hard1")
    lay.symlink("data/link", "hard1")
    lay.file("home/app/owned", b"owned\n", 0o640, 1000, 1000)
    l2 = lay.close()
    # Layer 3 (zstd): a whiteout of layer 1's file, an opaque directory
    # (its new entry before the marker: order must not matter).
    lay = Layer(tmp)
    lay.file("data/.wh.gone")
    lay.file("opq/upper", b"upper\n")
    lay.file("opq/.wh..wh..opq")
    lay.file("etc/motd", b"three layers\n")
    l3 = lay.close("zstd" if shutil.which("zstd") else "gzip")
    return write_oci(out, [l1, l2, l3], {
        "env": ["PATH=/usr/local/bin:/bin", "IMG_VAR=three"],
        "workdir": "/home/app", "user": "app", "cmd": ["/bin/sh"]})


def make_busybox(out, busybox, tmp):
    return write_oci(out, [busybox_layer(tmp, busybox, []).close()], {"env": ["PATH=/bin"]})


def make_docker_busybox(out, busybox, tmp):
    path, _, diff_id = busybox_layer(tmp, busybox, []).close()
    root = os.path.join(tmp, "docker")
    os.makedirs(os.path.join(root, diff_id))
    shutil.move(path, os.path.join(root, diff_id, "layer.tar"))
    cfg = config_json([diff_id], env=["PATH=/bin"])
    cname = hashlib.sha256(cfg).hexdigest() + ".json"
    with open(os.path.join(root, cname), "wb") as f:
        f.write(cfg)
    with open(os.path.join(root, diff_id, "VERSION"), "w") as f:
        f.write("1.0")
    manifest = [{"Config": cname, "RepoTags": ["cove-test/busybox:latest"],
                 "Layers": [diff_id + "/layer.tar"]}]
    with open(os.path.join(root, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    archive_dir(root, out)


def make_debian(out, rootfs_tar, tmp):
    """oci-archive of the exported rootfs plus a small layer making /srv/app."""
    base = os.path.join(tmp, "rootfs.tar")
    try:
        os.rename(rootfs_tar, base)
    except OSError:
        shutil.copyfile(rootfs_tar, base)
    l1 = (base, MT_TAR, sha256_file(base))
    lay = Layer(tmp)
    lay.dir("srv")
    lay.dir("srv/app")
    lay.file("srv/app/README", b"the image's WorkingDir\n")
    l2 = lay.close("gzip")
    root = os.path.join(tmp, "layout")
    write_oci(root, [l1, l2], {"env": [PATH_ENV, "GREETING=hello"], "workdir": "/srv/app",
                               "cmd": ["python3"]})
    archive_dir(root, out)


def hostile(out, tmp, entries):
    """One layer: a benign file, then the hostile entries."""
    lay = Layer(tmp)
    lay.dir("ok")
    lay.file("ok/file", b"fine\n")
    for e in entries:
        e(lay)
    return write_oci(out, [lay.close()], {})


def make_many(out, tmp, n=1000000):
    """n empty files m/0000000.. in one gzip layer, headers written directly
    (tarfile would take minutes for a million)."""
    path = os.path.join(tmp, "many.tar.gz")
    h = hashlib.sha256()
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                 compresslevel=1) as gz:
        def put(block):
            h.update(block)
            gz.write(block)

        def header(name, typeflag, mode):
            b = bytearray(512)
            b[0:len(name)] = name
            b[100:108] = b"%07o\0" % mode
            b[108:116] = b"0000000\0"
            b[116:124] = b"0000000\0"
            b[124:136] = b"00000000000\0"
            b[136:148] = b"%011o\0" % MTIME
            b[148:156] = b"        "
            b[156:157] = typeflag
            b[257:265] = b"ustar\x0000"
            b[148:156] = b"%06o\0 " % sum(b)
            return bytes(b)

        put(header(b"m/", b"5", 0o755))
        batch = []
        for i in range(n):
            batch.append(header(b"m/%07d" % i, b"0", 0o644))
            if len(batch) == 4096:
                put(b"".join(batch))
                batch = []
        put(b"".join(batch) + bytes(1024))
    return write_oci(out, [(path, MT_GZIP, h.hexdigest())], {})


def make_sparse(out, tmp, size=10 << 30):
    """'cove-huge' of size bytes in GNU sparse format 1.0 (pax): a map of
    one 4 KiB region at its end, so the layer itself is small."""
    data = b"x" * 4096
    smap = b"1\n%d\n%d\n" % (size - len(data), len(data))
    smap += bytes(-len(smap) % 512)
    lay = Layer(tmp)
    ti = lay._info("GNUSparseFile.0/cove-huge", tarfile.REGTYPE, 0o644, 0, 0)
    ti.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                      "GNU.sparse.name": "cove-huge", "GNU.sparse.realsize": str(size)}
    ti.size = len(smap) + len(data)
    lay.tar.addfile(ti, io.BytesIO(smap + data))
    return write_oci(out, [lay.close()], {})


HOSTILE = {
    "hostile-escape": [lambda l: l.file("../../cove-escape", b"escaped\n")],
    "hostile-abs": [lambda l: l.file("/cove-abs", b"absolute\n")],
    "hostile-symlink": [lambda l: l.symlink("cove-lnk", "/tmp"),
                        lambda l: l.file("cove-lnk/cove-owned", b"owned\n")],
    "hostile-hardlink": [lambda l: l.hardlink("cove-shadow", "/etc/shadow")],
}


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: mkimage.py KIND OUT [ARGS]")
    kind, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(out))) as tmp:
        if kind == "three":
            make_three(out, args[0], tmp)
        elif kind == "busybox":
            make_busybox(out, args[0], tmp)
        elif kind == "docker-busybox":
            make_docker_busybox(out, args[0], tmp)
        elif kind == "debian":
            make_debian(out, args[0], tmp)
        elif kind in HOSTILE:
            hostile(out, tmp, HOSTILE[kind])
        elif kind == "hostile-many":
            make_many(out, tmp, int(args[0]) if args else 1000000)
        elif kind == "hostile-sparse":
            make_sparse(out, tmp)
        else:
            sys.exit("mkimage.py: unknown kind '%s'" % kind)


if __name__ == "__main__":
    main()
