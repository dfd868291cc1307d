# setup_suite.bash - bats takes the setup_suite.bash beside the first file
# (or directory) it is given: this directory's is the one of tests/.
# shellcheck source=../setup_suite.bash
source "$(dirname "${BASH_SOURCE[0]}")/../setup_suite.bash"
