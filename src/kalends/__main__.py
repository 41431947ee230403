from kalends.cli.entry import main

main()
