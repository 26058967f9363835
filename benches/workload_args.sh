# Sourced by benches/table.sh and benches/vs_peers.sh: the `tfnc bench` arguments of each
# workload of benches/workloads.tfn at n elements (rows of 1024 where it has rows), the same
# shapes benches/peers/timing.py gives the peers.
args_for() { # workload size -> --arg list
  local n=$2 rows=$(( $2 / 1024 ))
  case $1 in
    saxpy) echo "--arg x=f32[$n] --arg z=f32[$n]" ;;
    gelu|total) echo "--arg x=f32[$n]" ;;
    bias_relu) echo "--arg x=f32[$rows,1024] --arg bias=f32[1024]" ;;
    softmax|layernorm) echo "--arg x=f32[$rows,1024]" ;;
  esac
}
