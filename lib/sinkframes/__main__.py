from .book.cli import main

raise SystemExit(main())
