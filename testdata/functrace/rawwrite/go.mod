module rawwrite

go 1.21
