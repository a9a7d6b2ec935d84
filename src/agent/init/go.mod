module durable-operators/sandbox-init

go 1.22
