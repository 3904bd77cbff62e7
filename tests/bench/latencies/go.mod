module kubectl-fluid/bench/latencies

go 1.22
