# Sourced by the measurement scripts: `timed NAME COMMAND...` runs COMMAND, appends its
# output and then a `WALL NAME <ms> ms exit <code>` line to "$log", and echoes that line.
timed() {
  local name=$1 start end code
  shift
  start=$(date +%s%N)
  "$@" >> "$log" 2>&1
  code=$?
  end=$(date +%s%N)
  echo "WALL $name $(( (end - start) / 1000000 )) ms exit $code" | tee -a "$log"
  return $code
}
