"""The soak: lovia writers in other processes while the app browses and acts."""
