#include "testing/fault_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "common/status.h"

namespace cohort::testing {

namespace fs = std::filesystem;

struct FaultVfs::Impl {
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  int64_t capacity = -1;
  // Every file written through this VFS that still exists, by path: what is on the disk.
  std::map<std::string, int64_t> sizes;
  std::function<void(int64_t)> before_write;
  int64_t writes = 0;
  bool keep_synced = false;

  int64_t Used() const {
    int64_t used = 0;
    for (const auto& [path, size] : sizes) used += size;
    return used;
  }
  void BeforeWrite() {
    ++writes;
    if (before_write) before_write(writes);
  }
};

namespace {

using Impl = FaultVfs::Impl;

// What SQLite allocates for each open file (the VFS's szOsFile): ours, then the real VFS's.
struct File {
  sqlite3_file base;
  Impl* vfs;
  const char* path;  // null for SQLite's nameless temporary files; valid until xClose
  sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
};
// The real file follows ours: it must start where a pointer may.
static_assert(sizeof(File) % alignof(std::max_align_t) == 0 || sizeof(File) % sizeof(void*) == 0);

File* Of(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return Of(f)->real(); }
const sqlite3_io_methods& RealMethods(sqlite3_file* f) { return *Real(f)->pMethods; }

int64_t RealSize(sqlite3_file* real) {
  sqlite3_int64 size = 0;
  if (real->pMethods->xFileSize(real, &size) != SQLITE_OK) return 0;
  return size;
}

int Close(sqlite3_file* f) { return RealMethods(f).xClose(Real(f)); }

int Read(sqlite3_file* f, void* buf, int amount, sqlite3_int64 offset) {
  return RealMethods(f).xRead(Real(f), buf, amount, offset);
}

int Write(sqlite3_file* f, const void* buf, int amount, sqlite3_int64 offset) {
  File* file = Of(f);
  Impl& vfs = *file->vfs;
  vfs.BeforeWrite();
  if (!file->path) return RealMethods(f).xWrite(Real(f), buf, amount, offset);
  int64_t& size = vfs.sizes[file->path];
  int64_t end = std::max<int64_t>(size, offset + amount);
  if (vfs.capacity >= 0 && vfs.Used() - size + end > vfs.capacity) return SQLITE_FULL;
  int rc = RealMethods(f).xWrite(Real(f), buf, amount, offset);
  if (rc == SQLITE_OK) size = end;
  return rc;
}

int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  int rc = RealMethods(f).xTruncate(Real(f), size);
  if (rc == SQLITE_OK && Of(f)->path) Of(f)->vfs->sizes[Of(f)->path] = RealSize(Real(f));
  return rc;
}

// Copies the file as it is now to <path>.synced, by rename so that a copy is never half there.
void KeepSyncedCopy(const std::string& path) {
  std::string tmp = path + ".synced-tmp";
  std::error_code ec;
  fs::copy_file(path, tmp, fs::copy_options::overwrite_existing, ec);
  COHORT_CHECK(!ec);
  fs::rename(tmp, path + ".synced", ec);
  COHORT_CHECK(!ec);
}

int Sync(sqlite3_file* f, int flags) {
  File* file = Of(f);
  file->vfs->BeforeWrite();
  int rc = RealMethods(f).xSync(Real(f), flags);
  if (rc == SQLITE_OK && file->path && file->vfs->keep_synced) KeepSyncedCopy(file->path);
  return rc;
}

int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return RealMethods(f).xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) { return RealMethods(f).xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return RealMethods(f).xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return RealMethods(f).xCheckReservedLock(Real(f), out);
}

int FileControl(sqlite3_file* f, int op, void* arg) {
  int rc = RealMethods(f).xFileControl(Real(f), op, arg);
  // A size hint may let the OS's VFS grow the file without a write: count what it did.
  if (rc == SQLITE_OK && Of(f)->path) Of(f)->vfs->sizes[Of(f)->path] = RealSize(Real(f));
  return rc;
}

int SectorSize(sqlite3_file* f) { return RealMethods(f).xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return RealMethods(f).xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int page, int page_size, int extend, void volatile** out) {
  return RealMethods(f).xShmMap(Real(f), page, page_size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return RealMethods(f).xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { RealMethods(f).xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int delete_flag) {
  return RealMethods(f).xShmUnmap(Real(f), delete_flag);
}
int Fetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return RealMethods(f).xFetch(Real(f), offset, amount, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return RealMethods(f).xUnfetch(Real(f), offset, p);
}

const sqlite3_io_methods kMethods = {
    3,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    Fetch,
    Unfetch,
};

Impl& VfsOf(sqlite3_vfs* vfs) { return *static_cast<Impl*>(vfs->pAppData); }

int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  Impl& impl = VfsOf(vfs);
  File* file = Of(f);
  file->base.pMethods = nullptr;  // until the real file is open: SQLite must not close it
  file->vfs = &impl;
  file->path = name;
  file->real()->pMethods = nullptr;
  int rc = impl.real->xOpen(impl.real, name, file->real(), flags, out_flags);
  if (rc != SQLITE_OK) {
    if (file->real()->pMethods) file->real()->pMethods->xClose(file->real());
    return rc;
  }
  COHORT_CHECK(file->real()->pMethods->iVersion >= 3);
  file->base.pMethods = &kMethods;
  if (name) impl.sizes[name] = RealSize(file->real());
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  Impl& impl = VfsOf(vfs);
  int rc = impl.real->xDelete(impl.real, name, sync_dir);
  if (rc == SQLITE_OK) {
    impl.sizes.erase(name);
    std::error_code ec;
    fs::remove(std::string(name) + ".synced", ec);
  }
  return rc;
}

int Access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return VfsOf(vfs).real->xAccess(VfsOf(vfs).real, name, flags, out);
}
int FullPathname(sqlite3_vfs* vfs, const char* name, int size, char* out) {
  return VfsOf(vfs).real->xFullPathname(VfsOf(vfs).real, name, size, out);
}
void* DlOpen(sqlite3_vfs* vfs, const char* name) {
  return VfsOf(vfs).real->xDlOpen(VfsOf(vfs).real, name);
}
void DlError(sqlite3_vfs* vfs, int size, char* out) {
  VfsOf(vfs).real->xDlError(VfsOf(vfs).real, size, out);
}
void (*DlSym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
  return VfsOf(vfs).real->xDlSym(VfsOf(vfs).real, handle, symbol);
}
void DlClose(sqlite3_vfs* vfs, void* handle) { VfsOf(vfs).real->xDlClose(VfsOf(vfs).real, handle); }
int Randomness(sqlite3_vfs* vfs, int size, char* out) {
  return VfsOf(vfs).real->xRandomness(VfsOf(vfs).real, size, out);
}
int Sleep(sqlite3_vfs* vfs, int micros) { return VfsOf(vfs).real->xSleep(VfsOf(vfs).real, micros); }
int CurrentTime(sqlite3_vfs* vfs, double* out) {
  return VfsOf(vfs).real->xCurrentTime(VfsOf(vfs).real, out);
}
int GetLastError(sqlite3_vfs* vfs, int size, char* out) {
  return VfsOf(vfs).real->xGetLastError(VfsOf(vfs).real, size, out);
}
int CurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  return VfsOf(vfs).real->xCurrentTimeInt64(VfsOf(vfs).real, out);
}
int SetSystemCall(sqlite3_vfs* vfs, const char* name, sqlite3_syscall_ptr call) {
  return VfsOf(vfs).real->xSetSystemCall(VfsOf(vfs).real, name, call);
}
sqlite3_syscall_ptr GetSystemCall(sqlite3_vfs* vfs, const char* name) {
  return VfsOf(vfs).real->xGetSystemCall(VfsOf(vfs).real, name);
}
const char* NextSystemCall(sqlite3_vfs* vfs, const char* name) {
  return VfsOf(vfs).real->xNextSystemCall(VfsOf(vfs).real, name);
}

}  // namespace

FaultVfs::FaultVfs() : impl_(std::make_unique<Impl>()) {
  COHORT_CHECK(sqlite3_initialize() == SQLITE_OK);
  sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
  COHORT_CHECK(real != nullptr && real->iVersion >= 3);
  COHORT_CHECK(real->pAppData != impl_.get());
  impl_->real = real;
  sqlite3_vfs& v = impl_->vfs;
  v.iVersion = 3;
  v.szOsFile = static_cast<int>(sizeof(File)) + real->szOsFile;
  v.mxPathname = real->mxPathname;
  v.zName = "cohort-fault";
  v.pAppData = impl_.get();
  v.xOpen = Open;
  v.xDelete = Delete;
  v.xAccess = Access;
  v.xFullPathname = FullPathname;
  v.xDlOpen = DlOpen;
  v.xDlError = DlError;
  v.xDlSym = DlSym;
  v.xDlClose = DlClose;
  v.xRandomness = Randomness;
  v.xSleep = Sleep;
  v.xCurrentTime = CurrentTime;
  v.xGetLastError = GetLastError;
  v.xCurrentTimeInt64 = CurrentTimeInt64;
  v.xSetSystemCall = SetSystemCall;
  v.xGetSystemCall = GetSystemCall;
  v.xNextSystemCall = NextSystemCall;
  COHORT_CHECK(sqlite3_vfs_register(&v, 1) == SQLITE_OK);
}

FaultVfs::~FaultVfs() {
  sqlite3_vfs_unregister(&impl_->vfs);
  sqlite3_vfs_register(impl_->real, 1);
}

void FaultVfs::SetCapacity(int64_t bytes) { impl_->capacity = bytes; }

int64_t FaultVfs::BytesUsed() const { return impl_->Used(); }

void FaultVfs::SetBeforeWrite(std::function<void(int64_t)> hook) {
  impl_->before_write = std::move(hook);
  impl_->writes = 0;
}

void FaultVfs::KeepSyncedCopies(bool keep) { impl_->keep_synced = keep; }

void FaultVfs::PowerCut(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-journal"}) {
    std::string file = path + suffix;
    if (fs::exists(file + ".synced")) {
      fs::rename(file + ".synced", file, ec);
      COHORT_CHECK(!ec);
    } else {
      fs::remove(file, ec);
    }
    fs::remove(file + ".synced-tmp", ec);
  }
  fs::remove(path + "-shm", ec);
}

}  // namespace cohort::testing
