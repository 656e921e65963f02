// The whole program of each link_check_* target (tests/CMakeLists.txt): what matters is that it
// links, with one pure library whole and only the libraries that library may use.
int main() { return 0; }
